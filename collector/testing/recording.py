"""Spans recorded into a private in-memory store and judged as `serve` and `tracescore score` judge.

A `Recording` loads spans through the decode stage's preparing and the one writer, which completes
every run when it stops (a test's spans have all ended: nothing waits for a grace period), into an
in-memory DuckDB with the stored schema. `score` runs `score_records`, the function behind `tracescore
score`, on it: the verdicts and their JSON are those of `score --format json` over the same spans
stored by `serve`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from opentelemetry.sdk.trace import ReadableSpan

from collector.decode.decoded import DecodedRequest
from collector.decode.prepare import prepare_decoded
from collector.model.domain import Span
from collector.store.database import open_memory_writer, open_writer
from collector.store.writer import WriteJob, Writer, WriterSettings
from collector.testing.explain import explain
from collector.testing.otlp_input import spans_from_file, spans_from_sdk
from scoring import Evidence, Run, Spec, Verdict
from scoring.batch.score import score_records
from scoring.evidence.runs import complete_runs, load_evidence
from scoring.report.text import verdicts_json, verdicts_text
from scoring.spec.files import load_spec_data, load_spec_text, load_specs

# A spec file or folder (a Path, or a str naming an existing one), YAML text, one spec as a mapping, a
# list of mappings, or Spec objects.
SpecLike = Path | str | Mapping[str, Any] | Sequence[Mapping[str, Any]] | Spec | Sequence[Spec]

# Every span handed over has ended: runs are completed when the writer stops, never by time.
_LOAD_ONCE = WriterSettings(grace_s=86_400, idle_timeout_s=86_400, checkpoint_interval_s=86_400)


def _names_a_file(text: str) -> bool:
    try:
        return Path(text).exists()
    except (OSError, ValueError):  # too long for a file name, or a NUL in it: YAML text then
        return False


def load_specs_like(spec: SpecLike) -> list[Spec]:
    """Specs from whatever a test hands over; raises `SpecError` with the loader's own message."""
    if isinstance(spec, Spec):
        return [spec]
    if isinstance(spec, Path):
        return load_specs([spec])
    if isinstance(spec, str):
        # One line naming an existing file or folder is that file; anything else is YAML text.
        if "\n" not in spec and _names_a_file(spec):
            return load_specs([Path(spec)])
        return load_spec_text(spec)
    if isinstance(spec, Mapping):
        return load_spec_data(dict(spec))
    items = list(spec)
    if all(isinstance(item, Spec) for item in items):
        return [item for item in items if isinstance(item, Spec)]
    return load_spec_data([dict(item) for item in items if isinstance(item, Mapping)])


def _domain_spans(spans: Iterable[ReadableSpan | Span]) -> list[Span]:
    spans = list(spans)
    sdk = [s for s in spans if isinstance(s, ReadableSpan)]
    own = [s for s in spans if isinstance(s, Span)]
    return own + spans_from_sdk(sdk)


@dataclass(frozen=True, slots=True)
class Scoring:
    """The verdicts of some specs over a recording's complete runs, in `tracescore score`'s order."""

    verdicts: tuple[Verdict, ...]
    evidence: Mapping[str, Evidence]

    @property
    def passed(self) -> bool:
        """Every verdict passed (and there was at least one)."""
        return bool(self.verdicts) and all(v.label == "pass" for v in self.verdicts)

    @property
    def failed(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.label != "pass")

    def json(self) -> str:
        """Exactly what `tracescore score --format json` prints for these verdicts (less its newline)."""
        return verdicts_json(self.verdicts)

    def to_list(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = json.loads(self.json())
        return data

    def text(self) -> str:
        """The table `tracescore score` prints."""
        return verdicts_text(self.verdicts)

    def explain(self) -> str:
        """The table, then each verdict that did not pass: its failing checks and its run's executions."""
        parts = [self.text()]
        parts.extend(explain(v, self.evidence.get(v.run_id)) for v in self.failed)
        return "\n\n".join(parts)


class Recording:
    """Spans in a private in-memory store (the stored schema, no file), their runs completed as `serve`
    completes them. Close it (or use it as a context manager) to free the store."""

    def __init__(self, spans: Iterable[ReadableSpan | Span], *, db: Path | str | None = None) -> None:
        """With `db`, the store is that DuckDB file (created, or added to) instead of memory: one that
        `tracescore score`, `report` and `spec draft` read once the recording is closed."""
        self._connection: duckdb.DuckDBPyConnection = (
            open_memory_writer() if db is None else open_writer(Path(db))
        )
        try:
            self._load(_domain_spans(spans))
        except BaseException:
            self._connection.close()
            raise

    @classmethod
    def from_file(cls, path: Path | str, *, db: Path | str | None = None) -> Recording:
        return cls(spans_from_file(Path(path)), db=db)

    def _load(self, spans: list[Span]) -> None:
        if not spans:
            return
        prepared = prepare_decoded(DecodedRequest(spans))
        answers: list[BaseException | None] = []
        writer = Writer(self._connection, _LOAD_ONCE)
        writer.start()
        writer.submit(WriteJob(prepared.spans, answers.append))
        writer.stop()  # completes every run, as serve's writer does once their traces have ended
        if answers != [None]:
            raise RuntimeError(f"the in-memory store refused the spans: {answers}")

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The in-memory store, for SQL over the stored tables (docs/storage.md)."""
        return self._connection

    def runs(self) -> list[Run]:
        """The complete runs, in the order verdicts come in (by first span)."""
        return [run for run, _, _, _ in complete_runs(self._connection)]

    def score(self, spec: SpecLike, *, task: str | None = None, run: str | None = None) -> Scoring:
        specs = load_specs_like(spec)
        verdicts = tuple(
            s.verdict() for s in score_records(self._connection, specs, run_id=run, task_id=task)
        )
        wanted = {v.run_id for v in verdicts if v.label != "pass"}
        chosen = [r for r in complete_runs(self._connection) if r[0].run_id in wanted]
        evidence = {e.run.run_id: e for e in load_evidence(self._connection, chosen)}
        return Scoring(verdicts, evidence)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def score_spans(spans: Iterable[ReadableSpan | Span], spec: SpecLike) -> Scoring:
    """The verdicts `serve` would give these spans' complete runs under `spec`."""
    with Recording(spans) as recording:
        return recording.score(spec)


def score_file(path: Path | str, spec: SpecLike) -> Scoring:
    """The verdicts of the runs in an OTLP export file (protobuf, JSON, or JSON lines)."""
    with Recording.from_file(path) as recording:
        return recording.score(spec)

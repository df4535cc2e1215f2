"""A batch of ClickHouse traces judged in memory: the writer's resolution without the writer's store.

Traces read from ClickHouse are complete already, so nothing waits for them: through a scratch store,
each batch paid the writer's inserts, a DuckDB database's schema and the read-back of its runs, about
half its CPU (bench/README.md). Here each trace is kept and resolved as the writer keeps and resolves it
and its runs' evidence built as online scoring builds it from what the writer hands over
(collector/store/live_evidence.py, whose test holds that evidence to what the store reads back), then
the Python judge gives the verdicts, in the order the store lists runs.

The `scores` rows `--store` and `--follow` write next to the traces are the export's SQL
(collector/store/export.py, SCORES) over the verdicts and the runs they judge alone, in a DuckDB
database in memory (`scores_rows`).

Only what a check asks of the spans themselves (tool definitions, state snapshots) and whether a run
without executions was read at all are SQL over the `spans` table: a DuckDB database in memory holding
the batch's spans alone, made the first time one of them is asked (`_SpansOnDemand`). A batch where a
run continues over several of its traces goes the scratch store's way, which reads such a run whole.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import duckdb
import pyarrow as pa

from collector.model.domain import OWN_SCOPE, Span
from collector.recognise.span import recognise
from collector.store.database import open_writer
from collector.store.export import SCORES
from collector.store.live_evidence import LiveRun, complete_in_memory, live_evidence
from collector.store.rows import run_traces_table, spans_table
from collector.store.schema import partitions
from scoring import Spec, Verdict, ensure_verdict_schema, score_evidence, store_verdicts, verdict_json
from scoring.batch.score import Scored
from scoring.judge.scorer import SpecSet
from scoring.verdict.arrow_view import register_arrow

_ALL_TIME: list[object] = [datetime(1970, 1, 1), datetime(2262, 1, 1)]


class _SpansOnDemand:
    """The batch's spans in a DuckDB database in memory, made on the first query: the evidence loaders
    and the unread-run finder only `execute` SQL over `spans`, and most batches never ask."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self._spans = spans
        self._connection: duckdb.DuckDBPyConnection | None = None

    def execute(self, query: str, parameters: object = None) -> duckdb.DuckDBPyConnection:
        if self._connection is None:
            self._connection = open_writer(Path(":memory:"), threads=1)
            # Ingest sequence 0, as complete_in_memory places every run's rows.
            _append(
                self._connection, partitions("spans")[0], spans_table(self._spans, 0, int(time.time() * 1e6))
            )
        return self._connection.execute(query, parameters)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


@dataclass(slots=True)
class Judged:
    """A batch judged in memory: its runs, in the store's order, and their verdicts, in that order."""

    runs: list[LiveRun]
    verdicts: list[Verdict]

    @property
    def scored(self) -> list[Scored]:
        return [Scored.of(verdict) for verdict in self.verdicts]


def _append(connection: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    register_arrow(connection, "_batch_rows", rows)
    try:
        columns = ", ".join(rows.column_names)
        connection.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM _batch_rows")
    finally:
        connection.unregister("_batch_rows")


def scores_rows(judged: Judged) -> list[dict[str, Any]]:
    """The rows of the `scores` export (collector/store/export.py, SCORES) of a batch's verdicts."""
    connection = open_writer(Path(":memory:"), threads=1)
    try:
        ensure_verdict_schema(connection)
        runs = [(run.summary, run.version, run.min_seq, run.max_seq) for run in judged.runs]
        _append(connection, partitions("run_traces")[0], run_traces_table(runs, int(time.time() * 1e6)))
        store_verdicts(connection, judged.verdicts, [verdict_json(v) for v in judged.verdicts])
        return stored_scores(connection)
    finally:
        connection.close()


def stored_scores(connection: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every verdict a scratch database holds, as rows of the `scores` export."""
    cursor = connection.execute(SCORES, _ALL_TIME)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def judge_in_memory(spans: Sequence[Span], specs: Sequence[Spec] | SpecSet) -> Judged | None:
    """The runs of these complete traces and their verdicts, as the scratch store's way gives them; None
    when a run continues over several of the traces (that way reads it whole, its versions summed)."""
    kept: list[Span] = []
    seen: set[tuple[str, str]] = set()
    for span in spans:
        key = (span.trace_id, span.span_id)
        # tracescore's own spans are left out, as ingest leaves them; a span sent twice counts as first
        # received, as the writer keeps it (its rows too).
        if span.resource.scope_name != OWN_SCOPE and key not in seen:
            seen.add(key)
            kept.append(span)
    runs = complete_in_memory((span.trace_id, recognise(span)) for span in kept)
    if len({run.summary.run_id for run in runs}) < len(runs):
        return None
    # The order the store lists runs in (scoring/evidence/runs.py, RUN_ORDER).
    runs.sort(key=lambda run: (run.summary.start_ns, run.summary.run_id))
    chosen = specs if isinstance(specs, SpecSet) else SpecSet(specs)
    on_demand = _SpansOnDemand(kept)
    try:
        # The loaders take a DuckDB connection and only ever call `execute` on it.
        evidence = live_evidence(cast(duckdb.DuckDBPyConnection, on_demand), runs)
        return Judged(runs, [verdict for e in evidence for verdict in score_evidence(chosen, e)])
    finally:
        on_demand.close()

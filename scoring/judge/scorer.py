"""Scoring stored runs: select, judge, and turn a failing scorer into an `error` verdict."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace

import duckdb

from scoring.evidence.reading import Unread
from scoring.evidence.runs import Evidence, Run, complete_runs, load_evidence
from scoring.judge.conversation import score_conversations
from scoring.judge.run import judge
from scoring.spec.select import SelectIndex, selects
from scoring.spec.specs import Spec
from scoring.spec.window import RunWindow, chosen_run_ids
from scoring.verdict.record import Verdict, error_verdict

log = logging.getLogger("tracescore.scoring")

_RUNS_PER_CHUNK = 2_000  # bounds memory when scoring a long history in one go


class SpecSet:
    """Specs with an index of what they select (scoring/spec/select.py): a run is tested only against
    the specs that can pick it, so scoring costs grow with the runs a spec selects, not specs × runs."""

    __slots__ = ("_index", "specs")

    def __init__(self, specs: Sequence[Spec]) -> None:
        self.specs = list(specs)
        self._index = SelectIndex([spec.select for spec in self.specs])

    def positions(self, run: Run) -> list[int]:
        """The positions of the specs whose `select` picks the run, in order."""
        return self._index.selected(run)

    def selecting(self, run: Run) -> list[Spec]:
        """The specs whose `select` picks the run, in their order."""
        return [self.specs[position] for position in self._index.selected(run)]


def unread_verdict(spec: Spec, run: Run, unread: Unread) -> Verdict:
    """The `error` verdict of a run none of whose spans tracescore reads, its reason naming their scopes."""
    verdict = error_verdict(
        run.run_id, run.trace_id, run.task_id, spec.name, spec.fingerprint, spec.profile, run.version, ""
    )
    return replace(verdict, reason=unread.reason)


def score_evidence(specs: Sequence[Spec] | SpecSet, evidence: Evidence) -> list[Verdict]:
    """The verdict of every spec that selects the run, in spec order. Give a `SpecSet` when scoring many
    runs against many specs: a plain list tests every spec's `select`."""
    if isinstance(specs, SpecSet):
        chosen = specs.selecting(evidence.run)
    else:
        chosen = [spec for spec in specs if selects(spec.select, evidence.run)]
    verdicts = []
    for spec in chosen:
        # A spec with `turns` judges conversations (scoring/judge/conversation.py), never one run.
        if spec.turns is not None:
            continue
        if evidence.unread is not None:  # the trace cannot say what was called: no verdict is confident
            verdicts.append(unread_verdict(spec, evidence.run, evidence.unread))
            continue
        try:
            verdicts.append(judge(spec, evidence))
        except Exception as exc:  # one broken scorer must not sink the batch
            log.exception("scoring run %s with spec %s failed", evidence.run.run_id, spec.name)
            run = evidence.run
            verdicts.append(
                error_verdict(
                    run.run_id,
                    run.trace_id,
                    run.task_id,
                    spec.name,
                    spec.fingerprint,
                    spec.profile,
                    run.version,
                    f"{type(exc).__name__}: {exc}",
                )
            )
    return verdicts


def score_runs(
    connection: duckdb.DuckDBPyConnection,
    specs: list[Spec],
    *,
    run_id: str | None = None,
    task_id: str | None = None,
    window: RunWindow | None = None,
) -> Iterator[Verdict]:
    """Verdicts for every complete run (optionally one run or one task, and those of a `window`) that
    some spec selects; then, unless one run is asked for, every complete conversation's for the specs
    with `turns` (with a window, those whose first turn it chooses)."""
    chosen = chosen_run_ids(connection, window, run_id=run_id, task_id=task_id)
    runs = complete_runs(connection, run_id=run_id, task_id=task_id, run_ids=chosen)
    indexed = SpecSet(specs)
    for start in range(0, len(runs), _RUNS_PER_CHUNK):
        for evidence in load_evidence(connection, runs[start : start + _RUNS_PER_CHUNK]):
            yield from score_evidence(indexed, evidence)
    if run_id is None:
        first_turns = None
        if any(spec.turns is not None for spec in specs):
            first_turns = chosen_run_ids(connection, window)
        yield from score_conversations(connection, specs, task_id=task_id, first_turns=first_turns)

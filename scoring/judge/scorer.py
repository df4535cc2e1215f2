"""Scoring stored runs: select, judge, and turn a failing scorer into an `error` verdict."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import duckdb

from scoring.evidence.runs import Evidence, complete_runs, load_evidence
from scoring.judge.conversation import score_conversations
from scoring.judge.run import judge
from scoring.spec.select import selects
from scoring.spec.specs import Spec
from scoring.verdict.record import Verdict, error_verdict

log = logging.getLogger("tracescore.scoring")

_RUNS_PER_CHUNK = 2_000  # bounds memory when scoring a long history in one go


def score_evidence(specs: list[Spec], evidence: Evidence) -> list[Verdict]:
    verdicts = []
    for spec in specs:
        # A spec with `turns` judges conversations (scoring/judge/conversation.py), never one run.
        if spec.turns is not None or not selects(spec.select, evidence.run):
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
) -> Iterator[Verdict]:
    """Verdicts for every complete run (optionally one run or one task) that some spec selects; then,
    unless one run is asked for, every complete conversation's for the specs with `turns`."""
    runs = complete_runs(connection, run_id=run_id, task_id=task_id)
    for start in range(0, len(runs), _RUNS_PER_CHUNK):
        for evidence in load_evidence(connection, runs[start : start + _RUNS_PER_CHUNK]):
            yield from score_evidence(specs, evidence)
    if run_id is None:
        yield from score_conversations(connection, specs, task_id=task_id)

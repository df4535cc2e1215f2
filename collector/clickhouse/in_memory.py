"""A batch of ClickHouse traces judged in memory: the writer's resolution without the writer's store.

Traces read from ClickHouse are complete already, so nothing waits for them: through a scratch store,
each batch paid the writer's inserts, a DuckDB database's schema and the read-back of its runs, about
half its CPU (bench/README.md). Here each trace is kept and resolved as the writer keeps and resolves it
and its runs' evidence built as online scoring builds it from what the writer hands over
(collector/store/live_evidence.py, whose test holds that evidence to what the store reads back), then
the Python judge gives the verdicts, in the order the store lists runs.

Only what a check asks of the spans themselves (tool definitions, state snapshots) and whether a run
without executions was read at all are SQL over the `spans` table: a DuckDB database in memory holding
the batch's spans alone, made the first time one of them is asked (`_SpansOnDemand`). A batch where a
run continues over several of its traces goes the scratch store's way, which reads such a run whole.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import duckdb

from collector.model.domain import OWN_SCOPE, Span
from collector.recognise.span import recognise
from collector.store.database import open_writer
from collector.store.live_evidence import complete_in_memory, live_evidence
from collector.store.rows import spans_table
from collector.store.schema import partitions
from scoring import Spec, score_evidence
from scoring.batch.score import Scored
from scoring.judge.scorer import SpecSet


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
            rows = spans_table(self._spans, 0, int(time.time() * 1e6))
            self._connection.register("_batch_spans", rows)
            columns = ", ".join(rows.column_names)
            self._connection.execute(
                f"INSERT INTO {partitions('spans')[0]} ({columns}) SELECT {columns} FROM _batch_spans"
            )
            self._connection.unregister("_batch_spans")
        return self._connection.execute(query, parameters)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


def judge_in_memory(spans: Sequence[Span], specs: Sequence[Spec] | SpecSet) -> list[Scored] | None:
    """The verdicts of every run in these complete traces, as the scratch store's way gives them; None
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
        return [Scored.of(verdict) for e in evidence for verdict in score_evidence(chosen, e)]
    finally:
        on_demand.close()

"""Scoring the traces where they live: chosen in ClickHouse, judged by the code that judges OTLP.

Each bounded batch of chosen traces is read whole and turned back into domain spans
(`collector.clickhouse.spans`). Judging it takes one of two ways, which give the same verdicts:
- in memory (collector/clickhouse/in_memory.py): recognition, the writer's resolution and online
  scoring's evidence, without a store;
- through the very path an OTLP request takes: the decode stage's preparing (recognition, rows), the
  one writer (run tracking, resolution, completion) into a scratch DuckDB database, then the batch
  scorer; where SQL over the batch's runs is asked for (`--where`, conversation specs) or a run
  continues over several traces of the batch. A batch's scratch database is in memory and gone once
  its verdicts are out; `report` keeps a scratch file for the whole window, since its sections read
  the stored runs.
A run judged from ClickHouse therefore gets the verdict `tracescore serve` gives it.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb

from collector.clickhouse import selection as sql
from collector.clickhouse import verdicts as clickhouse_verdicts
from collector.clickhouse.connection import ClickHouseError, Connection, rows, table_exists
from collector.clickhouse.in_memory import judge_in_memory, scores_rows, stored_scores
from collector.clickhouse.selection import Selection
from collector.clickhouse.spans import span_from_row
from collector.clickhouse.verdicts import (
    batch_token,
    create_tables,
    read_watermark,
    scorer_key,
    write_watermark,
)
from collector.decode.decoded import DecodedRequest
from collector.decode.prepare import prepare_decoded
from collector.model.domain import Span
from collector.store.database import open_writer
from collector.store.writer import WriteJob, Writer, WriterSettings
from scoring import Spec, ensure_verdict_schema, score_evidence, store_verdicts, verdict_json
from scoring.batch.score import Scored, score_records
from scoring.evidence.runs import complete_runs, load_evidence
from scoring.spec.window import RunWindow, chosen_run_ids

log = logging.getLogger("tracescore.clickhouse")

DEFAULT_BATCH_TRACES = 1000
# Traces chosen by one query: each query groups every span of the window by trace (ClickHouse's cost is
# the window's, ~0.3 s of CPU a million spans, whatever the LIMIT), so choosing a batch at a time paid
# that once per 1,000 traces, most of scoring's cost (bench/README.md). ~150 bytes a chosen trace.
PAGE_TRACES = 50_000
# Below this many runs in a batch, judging run by run beats one set-based query per spec (bench/README.md).
SET_BASED_FROM_RUNS = 500
# Every trace handed to the writer is complete already: nothing is completed by time, all at stop().
_SCRATCH_WRITER = WriterSettings(grace_s=86_400, idle_timeout_s=86_400, checkpoint_interval_s=86_400)


@dataclass(frozen=True, slots=True)
class Chosen:
    trace_id: str
    first_ns: int

    @property
    def position(self) -> tuple[int, str]:
        return self.first_ns, self.trace_id


def require_table(connection: Connection, selection: Selection) -> None:
    if not table_exists(connection, selection.database, selection.table):
        raise ClickHouseError(
            f"{connection.description} has no table {selection.database}.{selection.table}: is the "
            "Collector's clickhouse exporter writing there? (--ch-database, --ch-table)"
        )


def chosen_traces(
    connection: Connection,
    selection: Selection,
    *,
    batch_traces: int = DEFAULT_BATCH_TRACES,
    after: tuple[int, str] | None = None,
    settled_before_ns: int | None = None,
    page_traces: int = PAGE_TRACES,
) -> Iterator[list[Chosen]]:
    """The chosen traces in order, a batch at a time; ClickHouse picks them a page at a time (never the
    whole table), each page a whole number of batches (at least one)."""
    limit = max(page_traces // batch_traces, 1) * batch_traces
    while True:
        query = sql.traces_sql(selection, after=after, settled_before_ns=settled_before_ns, limit=limit)
        page = [Chosen(str(r[0]), int(r[1])) for r in rows(connection, query)]
        for start in range(0, len(page), batch_traces):
            yield page[start : start + batch_traces]
        if len(page) < limit:
            return
        after = page[-1].position


def read_spans(connection: Connection, selection: Selection, batch: list[Chosen]) -> list[Span]:
    first = min(c.first_ns for c in batch)
    query = sql.spans_sql(selection, [c.trace_id for c in batch], first)
    return [span_from_row(row) for row in rows(connection, query)]


def load_spans(scratch: duckdb.DuckDBPyConnection, spans: list[Span]) -> None:
    """Through the decode stage's preparing and the one writer, as an OTLP request's spans go."""
    prepared = prepare_decoded(DecodedRequest(spans))
    answers: list[BaseException | None] = []
    writer = Writer(scratch, _SCRATCH_WRITER)
    writer.start()
    writer.submit(WriteJob(prepared.spans, answers.append))
    writer.stop(timeout_s=3600)  # completes every run
    if answers != [None]:
        raise ClickHouseError(f"the scratch store refused the spans: {answers}")


class Scratch:
    """A scratch DuckDB file in a private temporary directory, removed on close; `in_memory`: a DuckDB
    database in memory instead, for one batch's runs, which need no file (each commit of a file also
    writes and syncs its WAL, and the file is created, laid out and deleted once a batch)."""

    def __init__(self, *, in_memory: bool = False) -> None:
        self.directory: Path | None = None
        if in_memory:
            self.connection = open_writer(Path(":memory:"), threads=1)
        else:
            self.directory = Path(tempfile.mkdtemp(prefix="tracescore-clickhouse-"))
            self.connection = open_writer(self.directory / f"{uuid.uuid4().hex}.duckdb", threads=1)
        ensure_verdict_schema(self.connection)

    def close(self) -> None:
        self.connection.close()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def _judge(
    scratch: duckdb.DuckDBPyConnection, specs: Sequence[Spec], *, store: bool, window: RunWindow | None
) -> list[Scored]:
    """Few runs: the Python judge, run by run (what serve's catch-up does); many: set-based scoring,
    whose cost is mostly one query per spec. Their verdicts are equal (tests/scoring/batch/). With a
    window, only the runs it chooses among the batch's (`--where`; the time was ClickHouse's to choose)."""
    runs = complete_runs(scratch, run_ids=chosen_run_ids(scratch, window))
    if len(runs) >= SET_BASED_FROM_RUNS:
        return list(score_records(scratch, specs, store=store, window=window))
    verdicts = [v for evidence in load_evidence(scratch, runs) for v in score_evidence(list(specs), evidence)]
    if store:
        store_verdicts(scratch, verdicts, [verdict_json(v) for v in verdicts])
    return [Scored.of(v) for v in verdicts]


def judge_batch(
    spans: list[Span], specs: Sequence[Spec], *, records: bool, window: RunWindow | None = None
) -> tuple[list[Scored], list[dict[str, Any]]]:
    """The verdicts of every run in these spans' traces (that `window` chooses), and (with `records`)
    their rows as the `scores` export has them. In memory (collector/clickhouse/in_memory.py) unless
    SQL over the batch's runs is asked for (a `--where` window, a conversation spec) or one of its runs
    continues over several of its traces."""
    if window is None and not any(spec.turns is not None for spec in specs):
        judged = judge_in_memory(spans, specs)
        if judged is not None:
            return judged.scored, scores_rows(judged) if records else []
    return judge_through_store(spans, specs, records=records, window=window)


def judge_through_store(
    spans: list[Span], specs: Sequence[Spec], *, records: bool, window: RunWindow | None = None
) -> tuple[list[Scored], list[dict[str, Any]]]:
    """`judge_batch` the way an OTLP request's spans go: through the writer into a scratch store."""
    scratch = Scratch(in_memory=True)
    try:
        load_spans(scratch.connection, spans)
        scored = _judge(scratch.connection, specs, store=records, window=window)
        if not records:
            return scored, []
        return scored, stored_scores(scratch.connection)
    finally:
        scratch.close()


def score_window(
    connection: Connection,
    selection: Selection,
    specs: Sequence[Spec],
    *,
    store: bool = False,
    batch_traces: int = DEFAULT_BATCH_TRACES,
    window: RunWindow | None = None,
) -> Iterator[Scored]:
    """Every chosen trace's verdicts (of the runs `window` chooses), batch after batch; with `store`,
    each batch's verdicts are in tracescore_verdicts before they are yielded."""
    require_table(connection, selection)
    if store:
        create_tables(connection, selection)
    for batch in chosen_traces(connection, selection, batch_traces=batch_traces):
        spans = read_spans(connection, selection, batch)
        scored, records = judge_batch(spans, specs, records=store, window=window)
        if store:
            clickhouse_verdicts.store_verdicts(connection, selection, records)
        yield from scored


def load_window(
    connection: Connection,
    selection: Selection,
    scratch: Scratch,
    *,
    batch_traces: int = DEFAULT_BATCH_TRACES,
) -> int:
    """Every chosen trace into one scratch store (for `report`, whose sections read the stored runs)."""
    require_table(connection, selection)
    traces = 0
    for batch in chosen_traces(connection, selection, batch_traces=batch_traces):
        load_spans(scratch.connection, read_spans(connection, selection, batch))
        traces += len(batch)
    return traces


def _barrier(
    connection: Connection, selection: Selection, after: tuple[int, str] | None, now_ns: int
) -> int | None:
    found = list(rows(connection, sql.first_unsettled_sql(selection, after, now_ns)))
    value = found[0][0] if found else None
    return int(value) if value is not None and int(value) > 0 else None


def follow(
    connection: Connection,
    selection: Selection,
    specs: Sequence[Spec],
    emit: Callable[[list[Scored]], None],
    *,
    settle_s: float = 30.0,
    poll_s: float = 5.0,
    batch_traces: int = DEFAULT_BATCH_TRACES,
    stop: threading.Event | None = None,
    run_window: RunWindow | None = None,
) -> None:
    """Score traces as they go quiet: each batch's verdicts are stored, handed to `emit`, and then the
    watermark moves past the batch.

    A trace is taken once none of its spans ended in the last `settle_s` seconds, in order of its first
    span; the watermark never passes a trace still going, so a long run holds the ones after it back
    rather than being skipped. After a crash the batch whose watermark was not written is scored again:
    its verdicts have the same keys and replace the first ones."""
    stop = stop or threading.Event()
    require_table(connection, selection)
    create_tables(connection, selection)
    key = scorer_key(selection, [s.fingerprint for s in specs])
    after = read_watermark(connection, selection, key)
    if after is not None:
        log.info("resuming after trace %s (first span at %d ns)", after[1], after[0])
    while not stop.is_set():
        settled = time.time_ns() - int(settle_s * 1e9)
        # Nothing before the watermark is chosen again: reading from it (less a day) spares each look a
        # scan of the whole table.
        base = selection
        if after is not None and (selection.since_ns is None or selection.since_ns < after[0]):
            base = replace(selection, since_ns=after[0])
        barrier = _barrier(connection, base, after, settled)
        window = base
        if barrier is not None:
            until = barrier if base.until_ns is None else min(barrier, base.until_ns)
            window = replace(base, until_ns=until)
        batch = next(
            chosen_traces(
                connection,
                window,
                batch_traces=batch_traces,
                after=after,
                settled_before_ns=settled,
                page_traces=batch_traces,  # one batch a look: the watermark moves batch by batch
            ),
            None,
        )
        if batch is None:
            stop.wait(poll_s)
            continue
        spans = read_spans(connection, selection, batch)
        scored, records = judge_batch(spans, specs, records=True, window=run_window)
        token = batch_token(key, batch[0].position, batch[-1].position, len(batch))
        clickhouse_verdicts.store_verdicts(connection, selection, records, token=token)
        # Printed before the watermark moves: a crash in between prints the batch again (at least
        # once), never not at all; the table takes it once either way.
        emit(scored)
        after = batch[-1].position
        write_watermark(connection, selection, key, after)

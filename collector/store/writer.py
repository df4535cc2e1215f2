"""The one writer: owns the read-write DuckDB connection and the run tracker, on its own thread.

Receivers hand it decoded spans and wait: each request is answered only after the group commit that
holds its spans (acknowledged means committed). Completing runs, re-reading stored spans after a
restart and checkpointing happen on the same thread between batches, so nothing else ever writes.

Why this module is long: the one-writer rule is this one class, on one thread, with one connection.
Group commits, run completion, replay after a restart, storage-failure handling and timed checkpoints
share its state and the order of its transactions, and reading them together is how a reader checks
that nothing else writes and that every acknowledgement follows its commit. What needs none of that
state lives beside it: `_tracker`, `_resolve`, `rows`, `live_evidence`, `_stored_spans`.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from collector.model.arrow import pa
from collector.recognise.span import Recognised, recognise
from collector.store._checkpointer import Checkpointer
from collector.store._fatal import exit_if_invalidated
from collector.store._resolve import ResolvedExecution, ResolvedRequest, RunSummary
from collector.store._run_trace_lookup import stored_traces
from collector.store._stored_ids import StoredIds
from collector.store._stored_spans import load_traces
from collector.store._tracker import TraceState, Tracker
from collector.store.acknowledged import Acknowledgements
from collector.store.database import wal_files
from collector.store.disk_space import DEFAULT_RESERVE_BYTES, DiskSpace
from collector.store.live_evidence import LiveRun, live_runs
from collector.store.memory_settings import release_free_memory
from collector.store.partitions import Partitions
from collector.store.rows import (
    EXECUTION_EXPRESSIONS,
    PreparedSpans,
    executions_table,
    requests_table,
    run_traces_table,
    run_turns_table,
    schemas,
    stamped,
)
from collector.store.schema import partitions
from collector.store.scope_tally import ScopeTally
from scoring.evidence.run_keys import RUN_KEY, keys_of
from scoring.verdict.arrow_view import register_arrow

log = logging.getLogger("tracescore.writer")

Done = Callable[[BaseException | None], None]


class StoreUnavailable(RuntimeError):
    """The spans were not stored; the client should retry (UNAVAILABLE / 503)."""


@dataclass(slots=True)
class WriteJob:
    spans: PreparedSpans
    done: Done
    # When the spans were handed over: a run's grace period counts from its spans' arrival, not from
    # the commit that follows (which waits for the batch under load).
    submitted_at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True, slots=True)
class WriterSettings:
    grace_s: float = 2.0
    idle_timeout_s: float = 30.0
    retention_s: float = 300.0
    # Completed traces kept for late and re-sent spans, which otherwise cost a look-up in `spans`: at
    # most this many bytes, estimated (collector/store/_tracker.py; ~2 kB a span on the bench's
    # workload). `serve` sizes it from the memory budget (collector/serve/memory.py).
    max_retained_bytes: int = 32 * 1024 * 1024
    max_batch_spans: int = 20_000
    tick_s: float = 0.02
    completion_interval_s: float = 0.05
    checkpoint_interval_s: float = 60.0
    # A write-ahead log this large is checkpointed before the interval is up (DuckDB's own automatic
    # checkpoint is set far off: it would run inside a commit of the writer).
    checkpoint_wal_bytes: int = 128 * 1024 * 1024
    # While storage fails every request is refused, so no batch can show it recovered: a probe does.
    probe_interval_s: float = 1.0
    # Free bytes the database's disk keeps after every commit and checkpoint (collector/store/disk_space.py).
    disk_reserve_bytes: int = DEFAULT_RESERVE_BYTES


@dataclass(slots=True)
class WriterStats:
    spans_stored: int = 0
    spans_duplicate: int = 0
    batches: int = 0
    traces_completed: int = 0
    runs_completed: int = 0
    write_failures: int = 0
    last_error: str | None = None
    # Checkpoints run on a thread of their own (collector/store/_checkpointer.py) and are CONCURRENT:
    # commits go on, except appends to the table the checkpoint is writing at that moment.
    checkpoints: int = 0
    checkpoints_deferred: int = 0  # refused while the scorer's cursor was replacing rows; retried soon
    checkpoint_seconds: float = 0.0
    last_checkpoint_seconds: float = 0.0
    # The writer's transactions that overlapped a checkpoint, and the longest of them (begin to commit):
    # what a checkpoint costs the acknowledgements and the run completions waiting on them.
    commits_during_checkpoints: int = 0
    longest_commit_during_checkpoint_seconds: float = 0.0


@dataclass(slots=True)
class CompletedTrace:
    trace_id: str
    version: int
    # (tool name, duration in ms, errored) of each execution, for the latency metrics.
    tool_durations: tuple[tuple[str, float, bool], ...] = ()
    # Its runs as just committed: online scoring judges them without reading them back.
    runs: tuple[LiveRun, ...] = ()


@dataclass(slots=True)
class _Backlog:
    spans: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, n: int) -> None:
        with self.lock:
            self.spans += n


# A span to store: its (trace id, span id), then (job, row in the job's table, recognised, arrival).
_Fresh = tuple[tuple[str, str], tuple[int, int, Recognised, float]]

# Committed with every run completion: every stored span below it belongs to a completed trace (what a
# restart re-reads from; `serve --export-dir` exports spans up to it).
STATE_REPLAY_FLOOR = "replay_floor_seq"
_STATE_REPLAY_FLOOR = STATE_REPLAY_FLOOR
_EVICT_INTERVAL_S = 0.1
_STATE_PROBE = "write_probe_at"
_SLOW_CHECKPOINT_S = 0.5
_DEFERRALS_PER_WARNING = 100


def _file_of(connection: duckdb.DuckDBPyConnection) -> Path | None:
    """The connection's database file (None for an in-memory database)."""
    rows = connection.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return Path(rows[0][0]) if rows and rows[0][0] else None


def _rows_of(jobs: list[WriteJob], fresh: list[_Fresh]) -> pa.Table:
    """The rows of these spans, taken from their jobs' tables (whole tables when nothing was dropped)."""
    wanted: list[list[int]] = [[] for _ in jobs]
    for _, (j, row, _, _) in fresh:
        wanted[j].append(row)
    parts = [
        job.spans.rows if len(rows) == job.spans.rows.num_rows else job.spans.rows.take(rows)
        for job, rows in zip(jobs, wanted, strict=True)
        if rows
    ]
    return pa.concat_tables(parts) if parts else schemas().span.empty_table()


class Writer:
    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        settings: WriterSettings,
        on_complete: Callable[[list[CompletedTrace]], None] | None = None,
        partitions: Partitions | None = None,
        acknowledgements: Acknowledgements | None = None,
    ) -> None:
        """`partitions`: shared with whoever else appends to partitioned tables of the file during a
        checkpoint (online scoring's verdicts); the writer's own otherwise. `acknowledgements`: the
        record of acknowledged spans kept beside the file (collector/store/acknowledged.py), verified
        before the file was opened; synced after each group commit, before its requests are answered."""
        self._con = connection
        self._settings = settings
        self._on_complete = on_complete
        self._queue: queue.SimpleQueue[WriteJob | None] = queue.SimpleQueue()
        self._tracker = Tracker(
            settings.grace_s, settings.idle_timeout_s, settings.retention_s, settings.max_retained_bytes
        )
        self._backlog = _Backlog()
        self._stopping = threading.Event()
        self._shed = threading.Event()
        # submit() and stop() take turns: a job queued after the stop marker would never be answered.
        self._accepting = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="tracescore-writer", daemon=True)
        self.stats = WriterStats()
        # Spans stored per instrumentation scope, and how many gave executions (`/metrics`).
        self.scopes = ScopeTally()
        self.healthy = True
        # fetchall, never fetchone, on this connection: a result read only in part keeps its transaction
        # open, and DuckDB then refuses every checkpoint once another cursor has replaced rows.
        ((last_seq,),) = connection.execute("SELECT coalesce(max(ingest_seq), 0) FROM spans").fetchall()
        self._next_seq = last_seq + 1
        self._stored_ids = StoredIds.read(connection)
        self._acks = acknowledgements
        if acknowledgements is not None:
            self._next_seq = acknowledgements.begin(connection, self._next_seq)
        self._replayed = self._replay()
        self._partitions = partitions or Partitions()
        database = _file_of(connection)
        self._disk = DiskSpace.of_database(database, settings.disk_reserve_bytes) if database else None
        self._checkpointer = Checkpointer(
            connection,
            wal_files(database)[0] if database else None,
            settings.checkpoint_interval_s,
            settings.checkpoint_wal_bytes,
            self._checkpointed,
            before=self._partitions.switch,
            space=self._disk,
        )

    # ---- called from other threads -------------------------------------------------------------

    @property
    def backlog_spans(self) -> int:
        return self._backlog.spans

    @property
    def open_traces(self) -> int:
        return self._tracker.open_count()

    @property
    def retained_trace_bytes(self) -> int:
        """Estimated memory of the completed traces kept for late and re-sent spans."""
        return self._tracker.retained_bytes

    @property
    def replayed_traces(self) -> int:
        return self._replayed

    def start(self) -> None:
        self._thread.start()
        self._checkpointer.start()

    def submit(self, job: WriteJob) -> None:
        with self._accepting:
            if self._stopping.is_set():
                raise StoreUnavailable("tracescore is shutting down")
            self._backlog.add(len(job.spans))
            self._queue.put(job)

    def shed_memory(self) -> None:
        """Memory is short (collector/serve/memory.py): soon, on the writer's thread, forget every
        completed trace kept for late spans, hand freed memory back to the system, and checkpoint (rows
        not yet checkpointed are held in DuckDB's memory)."""
        self._shed.set()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Drain the queue, complete every open run, checkpoint and close."""
        with self._accepting:
            self._stopping.set()
            self._queue.put(None)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.error("writer did not finish within %.0f s; the WAL keeps what was committed", timeout_s)

    # ---- the writer thread ---------------------------------------------------------------------

    def _run(self) -> None:
        last_completion = last_eviction = last_probe = time.monotonic()
        stop_seen = False
        while True:
            jobs, stop_seen = self._take(stop_seen)
            if jobs:
                self._write(jobs)
            now = time.monotonic()
            due_at = self._tracker.next_due_at()
            # As soon as a trace is due (verdict lag), but not more often than the interval: every
            # completion is a commit of its own.
            if (
                due_at is not None
                and now >= due_at
                and now - last_completion >= self._settings.completion_interval_s
            ):
                self._complete(now)
                last_completion = now
            if self._shed.is_set():
                self._shed.clear()
                evicted = self._tracker.evict(now, max_bytes=0)
                self._checkpointer.request()
                release_free_memory()
                # Every 2 s at most while memory stays short: a line only when it freed traces.
                log.log(
                    logging.INFO if evicted else logging.DEBUG,
                    "memory short: %d completed trace(s) forgotten, checkpoint requested",
                    evicted,
                )
            elif now - last_eviction >= _EVICT_INTERVAL_S:
                self._tracker.evict(now)
                last_eviction = now
            if now - last_probe >= self._settings.probe_interval_s:
                if not self.healthy:
                    self._probe()
                else:  # the disk too: readiness fails when it fills, even with no traffic
                    self._disk_shortage()
                last_probe = now
            if stop_seen and self._queue.empty():
                break
        self._complete(time.monotonic(), force=True)
        # The last checkpoint is a plain (FULL) one: it also vacuums what the concurrent ones skipped.
        self._checkpointer.stop()
        if self._checkpoint():
            self._stopped_clean()
        # The connection stays open: online scoring and the APIs still read through it while the
        # server finishes stopping; whoever opened it closes it.

    def _take(self, stop_seen: bool) -> tuple[list[WriteJob], bool]:
        jobs: list[WriteJob] = []
        count = 0
        try:
            item = self._queue.get(timeout=self._settings.tick_s)
        except queue.Empty:
            return jobs, stop_seen
        while True:
            if item is None:
                stop_seen = True
            else:
                jobs.append(item)
                count += len(item.spans)
            if count >= self._settings.max_batch_spans:
                break
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
        return jobs, stop_seen

    def _write(self, jobs: list[WriteJob]) -> None:
        if self._refused_for_space(jobs):
            return
        seq = self._next_seq
        # Each span once, by (trace id, span id): where its row is (job, row) and what it was recognised as.
        unique: dict[tuple[str, str], tuple[int, int, Recognised, float]] = {}
        for j, job in enumerate(jobs):
            for row, (key, item) in enumerate(zip(job.spans.keys, job.spans.recognised, strict=True)):
                unique.setdefault(key, (j, row, item, job.submitted_at))
        total = sum(len(job.spans) for job in jobs)
        traces = self._tracker.traces
        fresh: list[_Fresh] = []
        unknown: set[str] = set()
        reopened: set[str] = set()
        for key, entry in unique.items():
            trace_id, span_id = key
            state = traces.get(trace_id)
            if state is None:
                unknown.add(trace_id)
            elif span_id in state.nodes:
                continue  # a re-send: already stored
            elif not state.is_open:
                reopened.add(trace_id)
            fresh.append((key, entry))
        completed_before: set[str] = set()
        try:
            if unknown:
                completed_before, stored_ids = self._stored_span_ids(unknown)
                if stored_ids:
                    fresh = [e for e in fresh if e[0] not in stored_ids]
            table = stamped(_rows_of(jobs, fresh), seq, int(time.time() * 1e6))
            with self._partitions.writing():
                began, generation = time.monotonic(), self._checkpointer.generation
                self._con.begin()
                stored = self._insert(self._partitions.active("spans"), table)
                if reopened:
                    self._reopen([traces[t] for t in sorted(reopened)])
                self._con.commit()
                self._timed(began, generation)
        except Exception as exc:
            self._rollback()
            self._failed(exc)
            for job in jobs:
                self._finish(job, StoreUnavailable(f"could not store spans: {exc}"))
            return
        self._next_seq += 1
        recorded = self._record_acknowledged(seq, stored)
        self.healthy = recorded is None
        self.stats.batches += 1
        self.stats.spans_stored += stored
        self.stats.spans_duplicate += total - stored
        self._count_scopes(table, fresh)
        for (trace_id, _), (_, _, item, arrived) in fresh:
            self._tracker.add(trace_id, item, seq, arrived)
        # What the lookup above learnt: these traces have no stored runs, so completing them needs no
        # second look (only this writer stores runs, and the traces are in memory from now on).
        for trace_id in unknown - completed_before:
            state = traces.get(trace_id)
            if state is not None and state.persisted is None:
                state.persisted = False
        for job in jobs:
            self._finish(job, recorded)

    def _count_scopes(self, table: pa.Table, fresh: list[_Fresh]) -> None:
        # `table` holds the rows of `fresh`, in its order (_rows_of); counting is no reason to fail a batch.
        try:
            self.scopes.add(table, [bool(item.executions) for _, (_, _, item, _) in fresh])
        except Exception:
            log.exception("counting spans by instrumentation scope failed")

    def _record_acknowledged(self, seq: int, stored: int) -> StoreUnavailable | None:
        """Sync the count of acknowledged spans before answering. If it cannot be synced the spans are
        committed but not acknowledged: the answer is retryable, and the client's re-send is found
        stored (a duplicate) and acknowledged once a later record write succeeds."""
        if self._acks is None:
            return None
        try:
            self._acks.committed(seq, stored)
        except OSError as exc:
            self._failed(exc)
            return StoreUnavailable(f"could not record the acknowledgement: {exc}")
        return None

    def _stopped_clean(self) -> None:
        if self._acks is None:
            return
        try:
            self._acks.stopped_clean(self._next_seq)
        except OSError as exc:  # the next start compares the whole window instead: still correct
            log.warning("could not update the acknowledgement record at shutdown: %s", exc)
        self._acks.close()

    def _stored_span_ids(self, trace_ids: set[str]) -> tuple[set[str], set[tuple[str, str]]]:
        """Which of these traces (not in memory) were completed before, and their stored span ids.

        `spans` has no primary key (its index cost more than everything else in a write); re-sends are
        caught here instead: traces in memory by their span ids, others only if they were completed
        before (a restart, or evicted after the retention period), which the filter almost always rules
        out without reading `run_traces`."""
        maybe = self._stored_ids.traces.maybe(trace_ids)
        completed = set(stored_traces(self._con, maybe)) if maybe else set()
        if not completed:
            return set(), set()
        stored = self._con.execute(
            "SELECT trace_id, span_id FROM spans WHERE trace_id IN (SELECT unnest(?::VARCHAR[]))",
            [sorted(completed)],
        ).fetchall()
        return completed, {(t, s) for t, s in stored}

    def _finish(self, job: WriteJob, error: BaseException | None) -> None:
        self._backlog.add(-len(job.spans))
        try:
            job.done(error)
        except Exception:  # a receiver's callback must never take the writer down
            log.exception("answering a request failed")

    def _insert(
        self,
        table_name: str,
        rows: pa.Table,
        *,
        ignore_existing: bool = False,
        expressions: dict[str, str] | None = None,
    ) -> int:
        """Insert an Arrow batch (a column may be computed by an SQL expression); returns new rows."""
        if rows.num_rows == 0:
            return 0
        view = f"_batch_{table_name}"
        register_arrow(self._con, view, rows)
        try:
            verb = "INSERT OR IGNORE INTO" if ignore_existing else "INSERT INTO"
            columns = ", ".join(rows.column_names)
            values = ", ".join((expressions or {}).get(c, c) for c in rows.column_names)
            inserted = self._con.execute(f"{verb} {table_name} ({columns}) SELECT {values} FROM {view}")
            rows = inserted.fetchall()
            return int(rows[0][0]) if rows else 0
        finally:
            self._con.unregister(view)

    def _insert_runs(self, active: Callable[[str], str], rows: pa.Table) -> None:
        """Insert run_traces rows and their `run_keys` rows (collector/store/schema.py), from one batch."""
        if rows.num_rows == 0:
            return
        view = "_batch_run_traces"
        register_arrow(self._con, view, rows)
        try:
            columns = ", ".join(rows.column_names)
            self._con.execute(f"INSERT INTO {active('run_traces')} ({columns}) SELECT {columns} FROM {view}")
            self._con.execute(
                f"INSERT INTO {active('run_keys')} (run_key, trace_key, max_seq) {keys_of(view)}"
            )
        finally:
            self._con.unregister(view)

    def _refused_for_space(self, jobs: list[WriteJob]) -> bool:
        """Refuse these jobs, retryably, when their commit would leave the disk short: DuckDB must not
        find the disk full, for the checkpoint that would follow invalidates the database. The rows'
        Arrow bytes stand for what the commit writes to the WAL."""
        shortage = self._disk_shortage(sum(job.spans.rows.nbytes for job in jobs))
        if shortage is None:
            return False
        self.stats.write_failures += 1
        for job in jobs:
            self._finish(job, StoreUnavailable(f"could not store spans: {shortage}"))
        return True

    def _disk_shortage(self, writing: int = 0) -> str | None:
        """Why `writing` bytes must not be committed now (the disk would keep less than its reserve), or
        None. A shortage makes the writer unhealthy (readiness fails, ingest refuses, retryably) until the
        probe finds room again; said once."""
        shortage = self._disk.shortage(writing) if self._disk is not None else None
        if shortage is not None:
            if self.healthy:
                log.error("%s: spans are refused, retryably, until space is freed there", shortage)
            self.healthy = False
            self.stats.last_error = shortage
        return shortage

    def _rollback(self) -> None:
        with contextlib.suppress(duckdb.Error):  # no transaction was open
            self._con.rollback()

    def _failed(self, exc: BaseException) -> None:
        exit_if_invalidated(exc)
        # The traceback once, when storage starts failing; then a line per failure (disk full repeats).
        log.error("write failed (answered as retryable): %s", exc, exc_info=exc if self.healthy else None)
        self.healthy = False
        self.stats.write_failures += 1
        self.stats.last_error = str(exc)

    def _reopen(self, states: list[TraceState]) -> None:
        """Mark the stored runs of these traces open again, inside the caller's transaction. Deleted and
        inserted again rather than UPDATEd: an UPDATE takes DuckDB's global checkpoint lock (issue 17);
        deleted from every partition, inserted into the active one."""
        where, params = _stored_rows(states, "run_traces")
        deleted = []  # per partition: its columns (their order may differ: schema 5) and rows
        for partition in partitions("run_traces"):
            cursor = self._con.execute(f"DELETE FROM {partition} WHERE {where} RETURNING *", params)
            deleted.append(([d[0] for d in cursor.description or ()], cursor.fetchall()))
        active = self._partitions.active("run_traces")
        for columns, rows in deleted:
            if rows:
                status = columns.index("status")
                self._con.executemany(
                    f"INSERT INTO {active} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    [(*row[:status], "open", *row[status + 1 :]) for row in rows],
                )

    def _timed(self, began: float, generation: int) -> None:
        """Record a transaction of the writer that overlapped a checkpoint (its `generation` was odd
        when the transaction began, or changed before it committed)."""
        if generation % 2 == 0 and self._checkpointer.generation == generation:
            return
        took = time.monotonic() - began
        self.stats.commits_during_checkpoints += 1
        self.stats.longest_commit_during_checkpoint_seconds = max(
            self.stats.longest_commit_during_checkpoint_seconds, took
        )

    def _set_state(self, key: str, value: int) -> None:
        """Inside the caller's transaction. DELETE + INSERT, not INSERT OR REPLACE: an upsert takes
        DuckDB's global checkpoint lock, which refuses or stalls checkpoints (issue 17)."""
        self._con.execute("DELETE FROM tracescore_state WHERE key = ?", [key])
        self._con.execute("INSERT INTO tracescore_state VALUES (?, ?)", [key, value])

    def _probe(self) -> None:
        """One small commit: when it succeeds (space freed, I/O back), requests are accepted again. Not
        even tried while the disk is short."""
        if self._disk_shortage() is not None:
            return
        try:
            self._con.begin()
            self._set_state(_STATE_PROBE, int(time.time()))
            self._con.commit()
            if self._acks is not None:  # a record write that failed is retried too
                self._acks.sync()
        except Exception as exc:
            self._rollback()
            self.stats.last_error = str(exc)
            return
        self.healthy = True
        log.warning("storage is writable again: accepting spans")

    # ---- run completion ------------------------------------------------------------------------

    def _complete(self, now: float, *, force: bool = False) -> None:
        due = self._tracker.due(now, force=force)
        # On a short disk they are completed once it has room again, or at the next start.
        if not due or self._disk_shortage() is not None:
            return
        try:
            self._adopt_stored(due, now)
            executions: list[tuple[ResolvedExecution, int]] = []
            requests: list[tuple[ResolvedRequest, int]] = []
            runs: list[tuple[RunSummary, int, int, int]] = []
            resolutions = []
            for state in due:
                resolution = state.resolution()
                resolutions.append(resolution)
                executions.extend((e, state.max_seq) for e in resolution.executions)
                requests.extend((r, state.max_seq) for r in resolution.requests)
                runs.extend((r, state.version + 1, state.min_seq, state.max_seq) for r in resolution.runs)
            elsewhere = self._runs_maybe_elsewhere(runs)
            completed = [
                CompletedTrace(
                    state.trace_id,
                    state.version + 1,
                    tuple(
                        (
                            e.execution.tool_name,
                            (e.execution.end_ns - e.execution.start_ns) / 1e6,
                            e.execution.error,
                        )
                        for e in resolution.executions
                    ),
                    live_runs(resolution, state.version + 1, state.min_seq, state.max_seq, elsewhere),
                )
                for state, resolution in zip(due, resolutions, strict=True)
            ]
            replaced = [s for s in due if s.persisted]
            floor = self._tracker.replay_floor(self._next_seq, excluding={s.trace_id for s in due})
            with self._partitions.writing():
                began, generation = time.monotonic(), self._checkpointer.generation
                self._con.begin()
                # A run completed again replaces its rows, in whichever partition they are.
                for table in _TRACE_ROWS if replaced else ():
                    where, params = _stored_rows(replaced, table)
                    for partition in partitions(table):
                        self._con.execute(f"DELETE FROM {partition} WHERE {where}", params)
                active = self._partitions.active
                self._insert(
                    active("executions"), executions_table(executions), expressions=EXECUTION_EXPRESSIONS
                )
                self._insert(active("tool_requests"), requests_table(requests))
                self._insert_runs(active, run_traces_table(runs, int(time.time() * 1e6)))
                self._insert(active("run_turns"), run_turns_table(runs))
                self._set_state(_STATE_REPLAY_FLOOR, floor)
                self._con.commit()
                self._timed(began, generation)
        except Exception as exc:
            self._rollback()
            self._failed(exc)
            return
        for state in due:
            self._stored_ids.traces.add(state.trace_id)
        for summary, *_ in runs:
            self._stored_ids.runs.add(summary.run_id)
        self._tracker.completed(due, now)
        self.stats.traces_completed += len(due)
        self.stats.runs_completed += len(runs)
        if self._on_complete is not None:
            try:
                self._on_complete(completed)
            except Exception:
                log.exception("run-completion listener failed")

    def _runs_maybe_elsewhere(self, runs: list[tuple[RunSummary, int, int, int]]) -> set[str]:
        """The ids of these runs that may have rows in another trace, for online scoring to look up: those
        stored before (in this trace or another) and those completing in two traces at once."""
        traces_of: dict[str, set[str]] = {}
        for summary, *_ in runs:
            traces_of.setdefault(summary.run_id, set()).add(summary.trace_id)
        stored = self._stored_ids.runs
        return {run_id for run_id, traces in traces_of.items() if len(traces) > 1 or stored.may_hold(run_id)}

    def _adopt_stored(self, due: list[TraceState], now: float) -> None:
        """Traces new to this process may have been completed before (a restart, or a late span after
        the trace left memory): merge their stored spans so the recomputed runs are whole."""
        unknown = [s.trace_id for s in due if s.persisted is None]
        if not unknown:
            return
        maybe = self._stored_ids.traces.maybe(set(unknown))
        stored = stored_traces(self._con, maybe) if maybe else {}
        if stored:
            for span, seq in load_traces(self._con, list(stored)):
                self._tracker.add(span.trace_id, recognise(span), seq, now)
        for state in due:
            if state.persisted is None:
                found = stored.get(state.trace_id)
                state.persisted = found is not None
                if found is not None:
                    state.version = max(state.version, found.version)
                    state.stored_seqs = found.seqs

    def _replay(self) -> int:
        """After a restart: traces whose spans were committed but whose runs were never completed.

        Traces above the floor whose stored runs are complete and cover their last span (they completed
        after an older trace that held the floor down) are left alone: completing them again would
        bump their version and score the unchanged run a second time. A late span for one of them is
        still recognised as new or re-sent through run_traces, like any trace not in memory."""
        rows = self._con.execute(
            "SELECT value FROM tracescore_state WHERE key = ?", [_STATE_REPLAY_FLOOR]
        ).fetchall()
        floor = rows[0][0] if rows else 0
        rows = self._con.execute(
            "WITH since AS (SELECT trace_id, max(ingest_seq) AS last_seq FROM spans "
            "WHERE ingest_seq >= ? GROUP BY trace_id), "
            "done AS (SELECT trace_id, bool_and(status = 'complete') AS complete, max(max_seq) AS covered "
            "FROM run_traces WHERE trace_id IN (SELECT trace_id FROM since) GROUP BY trace_id) "
            "SELECT since.trace_id FROM since LEFT JOIN done USING (trace_id) "
            "WHERE done.complete IS NULL OR NOT done.complete OR done.covered < since.last_seq",
            [floor],
        ).fetchall()
        trace_ids = [r[0] for r in rows]
        now = time.monotonic()
        for span, seq in load_traces(self._con, trace_ids):
            self._tracker.add(span.trace_id, recognise(span), seq, now)
        if trace_ids:
            log.info("re-read %d trace(s) whose runs were not complete at the last stop", len(trace_ids))
        return len(trace_ids)

    def _checkpointed(self, took: float | None) -> None:
        """What the checkpointer reports: a checkpoint's seconds, or None when DuckDB refused one because
        another transaction that replaced or updated rows was open (retried within 0.2 s)."""
        if took is None:
            self.stats.checkpoints_deferred += 1
            if self.stats.checkpoints_deferred % _DEFERRALS_PER_WARNING == 0:
                log.warning(
                    "checkpoints deferred %d times so far: another connection keeps an upsert or UPDATE open",
                    self.stats.checkpoints_deferred,
                )
            return
        self.stats.checkpoints += 1
        self.stats.checkpoint_seconds += took
        self.stats.last_checkpoint_seconds = took

    def _checkpoint(self) -> bool:
        """The plain checkpoint at shutdown, on the writer's connection once nothing else writes; whether
        it succeeded (every span is then in the database file)."""
        if (shortage := self._checkpointer.shortage()) is not None:
            log.warning("no checkpoint at shutdown (the WAL keeps the data): %s", shortage)
            return False
        started = time.monotonic()
        try:
            self._con.execute("CHECKPOINT")
        except duckdb.Error as exc:
            log.warning("checkpoint failed (the WAL keeps the data): %s", exc)
            return False
        took = time.monotonic() - started
        self._checkpointed(took)
        if took >= _SLOW_CHECKPOINT_S:
            log.info("checkpoint at shutdown took %.2f s", took)
        return True


_BY_TRACE_ID = "trace_id IN (SELECT unnest(?::VARCHAR[]))"
# Per table holding rows of a completed trace: the column its rows carry their seq in (`run_turns` has
# none), and how its rows name their trace, given the trace ids.
_TRACE_ROWS: dict[str, tuple[str | None, str]] = {
    "executions": ("ingest_seq", _BY_TRACE_ID),
    "tool_requests": ("ingest_seq", _BY_TRACE_ID),
    "run_traces": ("max_seq", _BY_TRACE_ID),
    "run_keys": ("max_seq", f"trace_key IN (SELECT {RUN_KEY.format('unnest(?::VARCHAR[])')})"),
    "run_turns": (None, _BY_TRACE_ID),
}


def _stored_rows(states: list[TraceState], table: str) -> tuple[str, list[object]]:
    """A WHERE clause for the stored rows of these traces in `table`. No table has an index (schema.py,
    KEYLESS): the seqs they were stored within let DuckDB skip every row group outside that range."""
    seq, where = _TRACE_ROWS[table]
    params: list[object] = [[s.trace_id for s in states]]
    ranges = [s.stored_seqs for s in states]
    if seq is None or any(r is None for r in ranges):
        return where, params
    known = [r for r in ranges if r is not None]
    low, high = min(r[0] for r in known), max(r[1] for r in known)
    return f"{seq} BETWEEN ? AND ? AND {where}", [low, high, *params]

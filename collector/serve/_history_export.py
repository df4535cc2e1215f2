"""`serve --export-dir DIR`: history leaves the sidecar while it serves, in the layout of docs/export.md,
every row exactly once, on a thread and a cursor of its own.

Spans go by ingest sequence number. The writer commits, with every run completion, a floor below which
every stored span belongs to a completed trace (`replay_floor_seq`, what a restart re-reads from); the
window after the spans watermark up to that floor is fixed once written (spans are only appended), so a
window is the same rows whenever it is read. A late span has a new, higher number: it goes out when
its re-opened trace completes again.

Verdicts go by when they were stored (`scored_at`), a watermark of their own: a verdict stored after
its run's spans left goes out in a later window. Every verdict store of this process holds
`verdicts_lock` from its time stamp to its commit, so the horizon taken under that lock has no
uncommitted verdict below it. A verdict re-scored for the same run version is stored again, with a
later time, and exported again (the latest `evaluated_at` is the current one).

Each window is written under `DIR/_tmp/`, synced, renamed into its partitions as
`part-<node>-<after>-<i>.parquet` (`node`: this database file's exporter, `after`: the watermark the
window starts after), the directories synced, and only then is the watermark moved, in its own commit
(DELETE + INSERT of one `tracescore_state` row: nothing of the writer's waits on it). A crash between
the rename and that commit leaves the watermark where it was: the next attempt at the window writes
the same names again, replacing those files, and deletes any of them it did not write again (an
attempt's rows may differ when the window's end moved), so no row is there twice and none missing.
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from collector.model.arrow import pa
from collector.store.export import TRACES_FROM_ROWS, scores_after, spans_after
from collector.store.parquet_files import publish, remove_stale, write_staged
from collector.store.writer import STATE_REPLAY_FLOOR

log = logging.getLogger("tracescore.export")

STATE_NODE = "export_node"
STATE_SPANS = "export_spans_seq"
STATE_SCORES = "export_scores_us"
# Spans per window at most (~0.4 GB of Arrow at the 1.9 kB a span measured, bench/README.md, read as a
# stream): a first export of a long history goes out in windows, each committed on its own.
WINDOW_SPANS = 200_000
# The export at a stop gives way after this long, so that a stop stays within its grace period.
FINAL_CYCLE_S = 20.0
_EPOCH = datetime(1970, 1, 1)


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


@dataclass(slots=True)
class HistoryStats:
    spans: int = 0
    scores: int = 0
    files: int = 0
    windows: int = 0
    failures: int = 0
    last_error: str | None = None
    # Unix time the latest cycle ended with no failure (the start until one does): how long since the
    # history last left is what tells a stalled export (a disk that stays full, a lost mount).
    last_success_s: float = field(default_factory=time.time)


class HistoryExport:
    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        out: Path,
        every_s: float,
        verdicts_lock: threading.Lock,
    ) -> None:
        self._cursor = connection.cursor()
        self._out = out
        self._every_s = every_s
        self._verdicts_lock = verdicts_lock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tracescore-history-export", daemon=True)
        self.stats = HistoryStats()
        # Until a window of each table succeeds, files an earlier attempt left may be in place.
        self._unsure = {"otel_traces", "scores"}
        self._node = self._node_id()
        shutil.rmtree(self._staging_root(), ignore_errors=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 120.0) -> None:
        """End the timer (a window being written is finished), then export what the stop completed and
        scored (the writer and online scoring have stopped by now), then close the cursor."""
        self._stop.set()
        self._thread.join(timeout_s)
        if not self._thread.is_alive():
            self.cycle(final=True)
        self._cursor.close()

    def _run(self) -> None:
        self.cycle()  # at once: a window a crash left half done is finished first
        while not self._stop.wait(self._every_s):
            self.cycle()

    def cycle(self, final: bool = False) -> None:
        """Every window due now: spans up to the writer's floor, then verdicts up to now, each table on
        its own (one failing does not hold the other). A long backlog (a first export of a long
        history) gives way to a stop between windows, and the last cycle of a stop ends after
        FINAL_CYCLE_S: the watermarks keep the rest for the next start."""
        started = time.monotonic()
        until = started + FINAL_CYCLE_S if final else math.inf
        failures = self.stats.failures
        with self._failing("otel_traces"):
            while self._spans_window():
                if time.monotonic() >= until or (not final and self._stop.is_set()):
                    log.info("history export: stopping between windows; the rest goes out at the next start")
                    break
        with self._failing("scores"):
            self._scores_window()
        if self.stats.failures == failures:
            self.stats.last_success_s = time.time()
        took = time.monotonic() - started
        if took >= 1.0:
            log.info("history export cycle took %.1f s", took)

    @contextlib.contextmanager
    def _failing(self, table: str) -> Iterator[None]:
        """A failure is logged and counted, and the table's next window starts by removing what this
        attempt may have left (the watermark did not move)."""
        try:
            yield
        except Exception as exc:
            self.stats.failures += 1
            self.stats.last_error = str(exc)
            self._unsure.add(table)
            log.warning(
                "history export of %s to %s failed (tried again in %g s): %s",
                table,
                self._out,
                self._every_s,
                exc,
            )

    # ---- windows -------------------------------------------------------------------------------

    def _spans_window(self) -> bool:
        after = self._state(STATE_SPANS) or 0
        floor = self._state(STATE_REPLAY_FLOOR) or 0
        if floor - 1 <= after:
            return False
        up_to = self._window_end(after, floor)
        count = self._write("otel_traces", after, spans_after(self._cursor, after, up_to), TRACES_FROM_ROWS)
        self._set_state(STATE_SPANS, up_to)
        self.stats.spans += count
        return True

    def _window_end(self, after: int, floor: int) -> int:
        """The last sequence number of the window: all spans below the floor, or WINDOW_SPANS of them."""
        rows = self._cursor.execute(
            "SELECT ingest_seq, count(*) FROM spans WHERE ingest_seq > ? AND ingest_seq < ? "
            "GROUP BY ingest_seq ORDER BY ingest_seq",
            [after, floor],
        ).fetchall()
        total = 0
        for seq, count in rows:
            if total and total + count > WINDOW_SPANS:
                return int(seq) - 1
            total += count
        return floor - 1

    def _scores_window(self) -> None:
        if not self._has_verdicts():
            return
        with self._verdicts_lock:  # no verdict is between its time stamp and its commit now
            # A verdict stamped once the lock is free may share this microsecond: the window ends one
            # before it, so every later stamp is past the window and goes out in the next.
            horizon = datetime.now(UTC).replace(tzinfo=None) - timedelta(microseconds=1)
        after_us = self._state(STATE_SCORES) or 0
        after = _EPOCH + timedelta(microseconds=after_us)
        if horizon <= after:
            return
        count = self._write("scores", after_us, scores_after(self._cursor, after, horizon))
        self._set_state(STATE_SCORES, _micros(horizon))
        self.stats.scores += count

    def _write(self, table: str, after: int, rows: pa.RecordBatchReader, query: str | None = None) -> int:
        """One window's files, durable under their final names; the caller then moves the watermark."""
        name = f"part-{self._node}-{after}"
        staging = self._staging_root() / f"{table}-{after}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            pattern = name + "-{i}"
            count = (
                write_staged(rows, staging, pattern, query) if query else write_staged(rows, staging, pattern)
            )
            files = publish(staging, self._out / table)
            if table in self._unsure:
                removed = remove_stale(self._out / table, f"{name}-*.parquet", files)
                if removed:
                    log.info("removed %d file(s) an interrupted export of this window left", len(removed))
        finally:
            rows.close()
            shutil.rmtree(staging, ignore_errors=True)
            with contextlib.suppress(OSError):
                staging.parent.rmdir()  # this exporter's own staging directory, when empty
        self._unsure.discard(table)
        self.stats.files += len(files)
        self.stats.windows += 1
        return count

    # ---- state ---------------------------------------------------------------------------------

    def _staging_root(self) -> Path:
        return self._out / "_tmp" / self._node

    def _has_verdicts(self) -> bool:
        rows = self._cursor.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'verdicts'"
        ).fetchall()
        return bool(rows[0][0])

    def _state(self, key: str) -> int | None:
        rows = self._cursor.execute("SELECT value FROM tracescore_state WHERE key = ?", [key]).fetchall()
        return int(rows[0][0]) if rows else None

    def _set_state(self, key: str, value: int) -> None:
        """One commit of its own. DELETE + INSERT, never an upsert or UPDATE: those take DuckDB's global
        checkpoint lock (issue 17)."""
        self._cursor.begin()
        try:
            self._cursor.execute("DELETE FROM tracescore_state WHERE key = ?", [key])
            self._cursor.execute("INSERT INTO tracescore_state VALUES (?, ?)", [key, value])
            self._cursor.commit()
        except BaseException:
            self._cursor.rollback()
            raise

    def _node_id(self) -> str:
        """This database file's name in file names: two sidecars may export into one directory."""
        node = self._state(STATE_NODE)
        if node is None:
            node = secrets.randbits(48)
            self._set_state(STATE_NODE, node)
        return f"{node:012x}"

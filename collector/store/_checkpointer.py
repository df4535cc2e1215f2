"""Checkpoints on a thread and cursors of their own, made CONCURRENT so that commits go on meanwhile.

Why (issue 17, /work notes on DuckDB's checkpoint locks, DuckDB >= 1.5): a plain CHECKPOINT is FULL
when no open transaction began before the latest commit, and a FULL checkpoint takes the vacuum lock
for its whole length, which every INSERT and DELETE of the writer then waits on (0.4-1.5 s under load).
It is CONCURRENT, taking no vacuum lock, when such a transaction is open: so each checkpoint opens a
read transaction, commits a heartbeat row on another cursor (the latest commit is now newer than the
reader), checkpoints, then ends the read. A CONCURRENT checkpoint does not vacuum deleted rows; the
writer's plain checkpoint at shutdown does.

What would still wait: a commit appending to a table while the checkpoint writes that very table
(DuckDB's table-level checkpoint lock, removed only in 2.1, duckdb/duckdb#25988). So just before each
checkpoint the writer turns to the other partition of every table it appends to (`before`,
collector/store/partitions.py): the checkpoint writes what the writer no longer touches.

The checkpoint runs every `interval_s`, and sooner when the write-ahead log grows past `wal_bytes`:
automatic checkpoints are set far off (`checkpoint_threshold`, collector/store/database.py), because
one runs inside the commit that crosses the threshold, on the writer thread (duckdb/duckdb#20918).

A checkpoint waits while the disk could not hold what it writes (`space`, collector/store/disk_space.py):
one that finds the disk full makes DuckDB invalidate the database.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from collector.store._fatal import exit_if_invalidated
from collector.store.disk_space import DiskSpace

log = logging.getLogger("tracescore.writer")

_HEARTBEAT_KEY = "checkpoint_heartbeat"
# Another transaction that replaced or updated rows is open (a client's upsert): try again this soon.
RETRY_S = 0.2
_SLOW_S = 0.5
_TICK_S = 0.25


class Checkpointer:
    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        wal: Path | None,
        interval_s: float,
        wal_bytes: int,
        record: Callable[[float | None], None],
        before: Callable[[], None] | None = None,
        space: DiskSpace | None = None,
    ) -> None:
        """`record(seconds)` is told of each checkpoint (None: deferred); `wal` is the file whose size
        brings a checkpoint forward (None for an in-memory database); `before()` runs just before each
        checkpoint (the writer switches partitions); `space`, the file system a checkpoint writes to."""
        self._checkpoint_cursor = connection.cursor()
        self._reader = connection.cursor()
        self._heartbeat = connection.cursor()
        self._wal = wal
        self._interval_s = interval_s
        self._wal_bytes = wal_bytes
        self._record = record
        self._before = before
        self._space = space
        self._waiting_for_space = False
        # Odd while a checkpoint runs: a commit that saw it odd, or saw it change, ran during one.
        self.generation = 0
        self._switched = False
        self._stop = threading.Event()
        self._requested = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tracescore-checkpointer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Let a running checkpoint finish; no new one starts."""
        self._stop.set()
        self._thread.join(timeout_s)
        for cursor in (self._checkpoint_cursor, self._reader, self._heartbeat):
            cursor.close()

    def request(self) -> None:
        """Checkpoint at the next tick (memory is short: rows not yet checkpointed stay in memory)."""
        self._requested.set()

    def _wal_size(self) -> int:
        if self._wal is None:
            return 0
        try:
            return self._wal.stat().st_size
        except OSError:
            return 0

    def _run(self) -> None:
        next_at = time.monotonic() + self._interval_s
        while not self._stop.wait(_TICK_S):
            now = time.monotonic()
            if now < next_at and self._wal_size() < self._wal_bytes and not self._requested.is_set():
                continue
            self._requested.clear()
            next_at = now + (self._interval_s if self.checkpoint() else RETRY_S)

    def shortage(self) -> str | None:
        """Why a checkpoint must wait now: the write-ahead log's rows, written into the file, would eat
        into the disk's reserve. None when it may run."""
        return None if self._space is None else self._space.shortage(self._wal_size())

    def checkpoint(self) -> bool:
        """One CONCURRENT checkpoint now; False when DuckDB refused it or the disk is short (tried
        again in RETRY_S)."""
        if self._wait_for_space():
            return False
        # Not again when the last attempt was refused: switching back would put the writer on the
        # partition that holds what is still to checkpoint.
        if self._before is not None and not self._switched:
            self._before()
            self._switched = True
        self.generation += 1
        try:
            done = self._checkpoint()
        finally:
            self.generation += 1
        self._switched = not done
        return done

    def _wait_for_space(self) -> bool:
        """True while the disk is short; says so once when checkpoints start waiting and once when
        they resume."""
        shortage = self.shortage()
        if shortage is not None and not self._waiting_for_space:
            log.warning("checkpoints wait until the disk has room (the WAL keeps the data): %s", shortage)
        elif shortage is None and self._waiting_for_space:
            log.info("the disk has room again: checkpoints resume")
        self._waiting_for_space = shortage is not None
        return self._waiting_for_space

    def _checkpoint(self) -> bool:
        started = time.monotonic()
        ended: duckdb.Error | None = None
        try:
            self._reader.begin()
            try:
                self._reader.execute("SELECT 1 FROM tracescore_state LIMIT 1").fetchall()
                self._heartbeat.begin()
                self._heartbeat.execute("DELETE FROM tracescore_state WHERE key = ?", [_HEARTBEAT_KEY])
                self._heartbeat.execute(
                    "INSERT INTO tracescore_state VALUES (?, ?)", [_HEARTBEAT_KEY, int(time.time())]
                )
                self._heartbeat.commit()
                self._checkpoint_cursor.execute("CHECKPOINT")
            finally:
                # Not raised from here: when the checkpoint made DuckDB invalidate the database, this
                # rollback fails too, saying only that, and would replace DuckDB's own account of what
                # went wrong (issue 33). It is raised below when the checkpoint itself succeeded.
                ended = _rollback_quietly(self._reader)
            if ended is not None:
                raise ended
        except duckdb.TransactionException as exc:
            self._record(None)
            log.debug("checkpoint deferred: %s", exc)
            _rollback_quietly(self._heartbeat)
            return False
        except duckdb.Error as exc:
            # DuckDB's own message first (e.g. "failed to allocate data of size 1.5 MiB (62.8 MiB/64.0
            # MiB used)"), then the exit if the failure invalidated the database.
            log.warning("checkpoint failed (the WAL keeps the data): %s", exc)
            exit_if_invalidated(ended or exc)
            _rollback_quietly(self._heartbeat)
            return True
        took = time.monotonic() - started
        self._record(took)
        if took >= _SLOW_S:
            log.info("checkpoint took %.2f s (concurrent: commits went on meanwhile)", took)
        return True


def _rollback_quietly(cursor: duckdb.DuckDBPyConnection) -> duckdb.Error | None:
    """Roll back whatever transaction the cursor has open; the error, if that failed (no transaction
    was open, or the database was invalidated), returned rather than raised."""
    try:
        cursor.rollback()
    except duckdb.Error as exc:
        return exc
    return None

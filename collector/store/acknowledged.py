"""What tracescore acknowledged, counted apart from DuckDB, and whether the database still holds it.

DuckDB replays its write-ahead log up to the first entry it cannot read (a header with a bit flipped,
an entry's size or checksum field damaged, a file cut short) and drops the rest without a word, as it
would a torn last commit: measured with DuckDB 2.0, one bit of the log's header lost every span in it,
an entry header zeroed in the middle lost every later commit. A read-write open then truncates the
log at the next commit. So the writer counts the spans of each group commit in a record of its own
(`<db>.acks`, collector/store/_ack_record.py), synced after DuckDB's commit and before any request is
answered, and every start that finds something counted compares it with what the database holds
before DuckDB may write:

- `verify(db)` opens the database READ-ONLY: DuckDB then replays the log in memory and writes nothing
  (measured: the database, its log and their modification times are unchanged; read-write, DuckDB
  merges and moves a concurrent checkpoint's logs as it opens, and truncates a log it stopped early
  at the next commit). It counts the spans stored from the record's window on.
- Fewer than the record counts: the start is refused (`DatabaseError`, exit 2), nothing is changed.
  Only a tail that was never acknowledged may be missing, and it is not in the count: the record is
  written only after DuckDB's commit returned.
- `tracescore serve --accept-wal-loss` starts anyway, saying how many acknowledged spans are lost,
  and the record is set to what the database holds.

The window: spans are counted from `window_start`, an ingest sequence number; a clean stop, whose
checkpoint put everything in the database file, opens a new window at the next number, so that a
start after a clean stop compares nothing and rows removed by hand while tracescore was stopped are
never taken for a loss. Checkpoints while serving change nothing: they move rows from the log to the
file, and the count covers both. Schema migrations keep every span and its `ingest_seq`. A database
made before the record existed has no record: that start compares nothing, says so once, and the
record is kept from then on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import duckdb

from collector.store._ack_record import AckRecord, RecordFile, RecordUnreadable, read_record, record_path
from collector.store.database import DatabaseError, _check_wal, explain_open_error

log = logging.getLogger("tracescore.store")

ADVICE = (
    "run `tracescore doctor --db {db}` and read docs/reliability.md (promise 10); to start anyway, keep a "
    "copy of every {name}* file and start with --accept-wal-loss"
)


@dataclass(frozen=True, slots=True)
class Verification:
    """What the record counts and what the database holds from the record's window on."""

    record: AckRecord | None
    held: int | None  # None: not counted (no record, or nothing counted since the last clean stop)

    @property
    def missing(self) -> int:
        if self.record is None or self.held is None:
            return 0
        return max(0, self.record.spans - self.held)


def held_spans(connection: duckdb.DuckDBPyConnection, window_start: int) -> int:
    """Spans stored with an ingest sequence number from `window_start` on (fetchall: a result read in
    part keeps a transaction open on the writer's connection)."""
    try:
        ((count,),) = connection.execute(
            "SELECT count(*) FROM spans WHERE ingest_seq >= ?", [window_start]
        ).fetchall()
    except duckdb.CatalogException:  # the log held even the tables, and DuckDB dropped it all
        return 0
    return int(count)


class RecordDamaged(DatabaseError):
    """The record file exists and neither of its copies can be read."""


def _read(db: Path) -> AckRecord | None:
    try:
        return read_record(record_path(db))
    except RecordUnreadable as exc:
        raise RecordDamaged(
            f"{exc}: what was acknowledged cannot be compared with {db}; "
            + ADVICE.format(db=db, name=db.name)
        ) from exc


def verify(db: Path) -> Verification:
    """Compare without changing anything: the database is opened read-only, and only when the record
    counts something. Raises `DatabaseError` when the record or the database cannot be read."""
    record = _read(db)
    if record is None or record.spans == 0:
        return Verification(record, None)
    if not db.exists():
        return Verification(record, 0)
    _check_wal(db)  # a log whose head is zeros: DuckDB would take it for empty, the check names it
    try:
        connection = duckdb.connect(str(db), read_only=True)
    except duckdb.Error as exc:
        raise explain_open_error(db, exc) from exc
    try:
        return Verification(record, held_spans(connection, record.window_start))
    finally:
        connection.close()


def shortfall(db: Path, verification: Verification) -> str:
    """What is missing, in words (doctor's line)."""
    record = verification.record
    assert record is not None
    return (
        f"{db}: {verification.missing} acknowledged span(s) are not in the database or its write-ahead "
        f"log (the acknowledgement record {record_path(db).name} counts {record.spans} stored from ingest "
        f"sequence {record.window_start} on, DuckDB replayed {verification.held}: the log is damaged, "
        "cut short or was moved aside, and DuckDB stops quietly where it cannot read)"
    )


def refusal(db: Path, verification: Verification) -> str:
    """The one line a refused start prints."""
    return f"{shortfall(db, verification)}. Nothing was changed; " + ADVICE.format(db=db, name=db.name)


class Acknowledgements:
    """The writer's count of acknowledged spans, written and synced after each group commit."""

    def __init__(self, db: Path, verification: Verification) -> None:
        self._db = db
        self._record = verification.record
        self._file: RecordFile | None = None
        self._window_start = 1
        self._last_seq = 0
        self._spans = 0
        self._dirty = False

    @classmethod
    def at_start(cls, db: Path, *, accept_loss: bool = False) -> Acknowledgements:
        """Before the database is opened for writing: refuse (`DatabaseError`) when it lacks acknowledged
        spans, unless the operator accepts the loss."""
        try:
            verification = verify(db)
        except RecordDamaged as exc:
            if not accept_loss:
                raise
            # Made again once the database is open for writing (begin), not before: another process
            # may hold the database, and its record with it.
            log.error("%s; it is made again (--accept-wal-loss)", exc.__cause__)
            verification = Verification(None, None)
        if verification.missing:
            if not accept_loss:
                raise DatabaseError(refusal(db, verification))
            log.error(
                "starting with --accept-wal-loss: %d acknowledged span(s) are lost (the record counts %d, "
                "the database holds %d); the record now counts what the database holds",
                verification.missing,
                verification.record.spans if verification.record else 0,
                verification.held,
            )
        elif verification.record is None and db.exists():
            log.info(
                "%s has no acknowledgement record yet (made before tracescore kept one): nothing to compare "
                "at this start; %s is kept from now on",
                db,
                record_path(db).name,
            )
        return cls(db, verification)

    def begin(self, connection: duckdb.DuckDBPyConnection, next_seq: int) -> int:
        """On the writer's connection, once the database is open: count what it holds, make or update the
        record, and return the ingest sequence number the next commit must use at least."""
        record = self._record
        self._window_start = record.window_start if record is not None else next_seq
        # What the database holds is what the record counts from now on: more than it counted when a
        # commit's record write was cut short, fewer only after an accepted loss.
        self._spans = held_spans(connection, self._window_start)
        next_seq = max(next_seq, self._window_start)
        self._last_seq = next_seq - 1
        path = record_path(self._db)
        try:
            self._file = RecordFile(path, record)
            if record is None or (record.spans, record.last_seq) != (self._spans, self._last_seq):
                self._file.write(self._window_start, self._last_seq, self._spans)
        except OSError as exc:  # a full disk, a folder serve may not create files in: one line, exit 2
            raise DatabaseError(
                f"{path}: cannot write the acknowledgement record ({exc.strerror or exc}); serve keeps it "
                "beside the database and needs to create and write it there"
            ) from exc
        return next_seq

    def committed(self, seq: int, stored: int) -> None:
        """After DuckDB committed `stored` new spans under `seq`: returns once the record is synced
        (raises OSError when it could not be; a later commit or `sync` writes it again)."""
        self._last_seq = max(self._last_seq, seq)
        self._spans += stored
        if stored or self._dirty:
            self._dirty = True
            self._write()

    def sync(self) -> None:
        """Write the record again if the last write failed."""
        if self._dirty:
            self._write()

    def stopped_clean(self, next_seq: int) -> None:
        """Everything is in the database file (the stop's checkpoint succeeded): a new, empty window."""
        self._window_start, self._spans, self._dirty = next_seq, 0, True
        self._write()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _write(self) -> None:
        assert self._file is not None, "begin() first"
        self._file.write(self._window_start, self._last_seq, self._spans)
        self._dirty = False

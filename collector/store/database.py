"""Opening the DuckDB file: schema, settings, and a clear message when another process holds it."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from collector.store import unread as _unread  # noqa: F401  (installs the unread-run finder into scoring)
from collector.store.disk_space import DiskSpace, no_space
from collector.store.schema import MIGRATIONS, SCHEMA_VERSION, create_tables_sql, create_views_sql
from scoring.verdict.ddl import ZSTD, execute_ddl, supports_zstd


class DatabaseError(RuntimeError):
    """A database problem a person must act on; the message says what to do."""


_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>\S+) \(PID (?P<pid>\d+)\)")
_WAL_HEAD_BYTES = 16


# The write-ahead logs DuckDB may keep beside a database file: `<db>.wal`, and from 1.5 (commits during a
# checkpoint, duckdb/duckdb#20052) `<db>.checkpoint.wal`, where commits go while a checkpoint runs, and
# `<db>.recovery.wal`, written while such a log is folded back after a crash. All belong to the file:
# a copy, a move or a deletion takes them with it.
WAL_SUFFIXES = (".wal", ".checkpoint.wal", ".recovery.wal")


def wal_files(path: Path) -> tuple[Path, ...]:
    """Every write-ahead log the database at `path` may have, whether or not it exists now."""
    return tuple(path.with_name(path.name + suffix) for suffix in WAL_SUFFIXES)


def _unreplayable_wal(path: Path, why: str, wal: Path | None = None) -> DatabaseError:
    logs = (
        str(wal)
        if wal is not None
        else " / ".join(str(w) for w in wal_files(path) if w.exists()) or (f"{path}.wal")
    )
    return DatabaseError(
        f"{path}: the write-ahead log {logs} could not be replayed ({why}). Nothing was deleted. "
        f"Keep a copy of the database and its logs; to start anyway, move {logs} aside (its unreplayed "
        "changes are then lost) and start again with --accept-wal-loss."
    )


def _check_wal(path: Path) -> None:
    """Refuse a WAL whose first bytes are zeros (blocks a file system lost in a crash): DuckDB takes it
    for an empty log, opens without a word and overwrites it at the next commit, losing all it held.
    Any other damage DuckDB reports itself, and explain_open_error words it the same way."""
    for wal in wal_files(path):
        try:
            with wal.open("rb") as log:
                head = log.read(_WAL_HEAD_BYTES)
        except FileNotFoundError:
            continue
        if head and not any(head):
            raise _unreplayable_wal(path, "it begins with zero bytes, so DuckDB would take it for empty", wal)


def explain_open_error(path: Path, exc: Exception) -> DatabaseError:
    text = str(exc)
    holder = _LOCK_HOLDER.search(text)
    if holder or "Could not set lock" in text:
        who = f"process {holder['pid']} ({holder['program']})" if holder else "another process"
        return DatabaseError(
            f"{path} is in use by {who}; DuckDB allows one process per file. Stop that process "
            f"(a running `tracescore serve` answers queries through its API) or use another --db."
        )
    if no_space(exc):
        return _disk_full(path, text)
    if "WAL" in text or "replay" in text.lower():
        return _unreplayable_wal(path, text)
    return DatabaseError(f"cannot open {path}: {text}")


def _disk_full(path: Path, why: str) -> DatabaseError:
    return DatabaseError(
        f"cannot start on {path}: {why}. Free space on that disk and start again (nothing was deleted)"
    )


def open_writer(
    path: Path,
    *,
    memory_limit: str | None = None,
    threads: int | None = None,
    disk_reserve: int | None = None,
) -> duckdb.DuckDBPyConnection:
    """The one read-write connection; creates or upgrades the schema. With `disk_reserve`, refused
    when the disk keeps less than that free (collector/store/disk_space.py)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if disk_reserve is not None and (shortage := DiskSpace.of_database(path, disk_reserve).shortage()):
        raise _disk_full(path, shortage)
    config: dict[str, str | bool | int | float | list[str]] = {}
    if memory_limit:
        config["memory_limit"] = memory_limit
    if threads:
        config["threads"] = threads
    _check_wal(path)
    try:
        connection = duckdb.connect(str(path), config=config)
    except duckdb.Error as exc:
        raise explain_open_error(path, exc) from exc
    try:
        _prepare(connection, path)
    except duckdb.Error as exc:
        connection.close()
        if no_space(exc):  # found out by DuckDB all the same (another process filled the disk meanwhile)
            raise _disk_full(path, str(exc).splitlines()[0]) from exc
        raise
    except DatabaseError:
        connection.close()
        raise
    return connection


def _prepare(connection: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Settings, schema (created or upgraded) and views on a just-opened writer connection."""
    # An automatic checkpoint runs inside the commit that crosses the threshold, on the writer thread, and
    # may hold every other commit off (duckdb/duckdb#20918): the checkpointer thread checkpoints instead,
    # by time and by WAL size (collector/store/_checkpointer.py); this only bounds a runaway log.
    connection.execute("SET checkpoint_threshold = '4GB'")
    for statement in create_tables_sql():
        execute_ddl(connection, statement)
    # fetchall: a result read only in part would keep a transaction open on the writer's connection.
    ((stored,),) = connection.execute("SELECT max(version) FROM schema_version").fetchall()
    if stored is not None and stored > SCHEMA_VERSION:
        raise DatabaseError(
            f"{path} has schema version {stored}, newer than this tracescore understands ({SCHEMA_VERSION}); "
            "upgrade tracescore."
        )
    if stored is None or stored < SCHEMA_VERSION:
        # One transaction: a migration stopped half-way (renaming tables into partitions, schema 6) would
        # be run again on a file it had already changed. A failed statement ends a DuckDB transaction, so
        # whether the file takes ZSTD columns is asked before it, not found out by trying.
        zstd = supports_zstd(connection)
        connection.begin()
        try:
            for version in range((stored or SCHEMA_VERSION) + 1, SCHEMA_VERSION + 1):
                for step in MIGRATIONS.get(version, ()):
                    if isinstance(step, str):
                        connection.execute(step if zstd else step.replace(ZSTD, ""))
                    else:
                        step(connection, zstd)
            connection.execute("INSERT INTO schema_version (version) VALUES (?)", [SCHEMA_VERSION])
            connection.commit()
        except duckdb.Error as exc:
            connection.rollback()
            if no_space(exc):
                raise
            raise DatabaseError(
                f"{path}: upgrading the schema to version {SCHEMA_VERSION} failed: {exc}"
            ) from exc
    # The views read the migrated tables: created only now.
    for statement in create_views_sql():
        execute_ddl(connection, statement)
    # The API's read-only SQL runs on this instance: no file or network access from SQL, ever
    # (settings are instance-wide; the writer itself only uses registered Arrow batches).
    connection.execute("SET enable_external_access = false")
    connection.execute("SET autoinstall_known_extensions = false")
    connection.execute("SET autoload_known_extensions = false")
    connection.execute("SET lock_configuration = true")  # nothing after this point may loosen it


def open_memory_writer() -> duckdb.DuckDBPyConnection:
    """A writer connection on a private in-memory database with the stored schema: the Python API's
    and the pytest plugin's store (collector/testing/), which writes no file."""
    connection = duckdb.connect(":memory:", config={"threads": 1})
    try:
        _prepare(connection, Path(":memory:"))
    except BaseException:
        connection.close()
        raise
    return connection


def open_reader(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection for the CLI when no server holds the file."""
    if not path.exists():
        raise DatabaseError(f"{path} does not exist; run `tracescore serve --db {path}` first, or pass --db")
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise explain_open_error(path, exc) from exc

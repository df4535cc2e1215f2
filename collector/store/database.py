"""Opening the DuckDB file: schema, settings, and a clear message when another process holds it."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from collector.store.schema import MIGRATIONS, SCHEMA_VERSION, create_tables_sql, create_views_sql
from scoring.verdict.ddl import execute_ddl


class DatabaseError(RuntimeError):
    """A database problem a person must act on; the message says what to do."""


_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>\S+) \(PID (?P<pid>\d+)\)")
_WAL_HEAD_BYTES = 16


def _unreplayable_wal(path: Path, why: str) -> DatabaseError:
    return DatabaseError(
        f"{path}: the write-ahead log {path}.wal could not be replayed ({why}). Nothing was deleted. "
        f"Keep a copy of both files; to start anyway, move {path}.wal aside (its unreplayed changes "
        "are then lost) and start again."
    )


def _check_wal(path: Path) -> None:
    """Refuse a WAL whose first bytes are zeros (blocks a file system lost in a crash): DuckDB takes it
    for an empty log, opens without a word and overwrites it at the next commit, losing all it held.
    Any other damage DuckDB reports itself, and explain_open_error words it the same way."""
    try:
        with path.with_name(path.name + ".wal").open("rb") as wal:
            head = wal.read(_WAL_HEAD_BYTES)
    except FileNotFoundError:
        return
    if head and not any(head):
        raise _unreplayable_wal(path, "it begins with zero bytes, so DuckDB would take it for empty")


def explain_open_error(path: Path, exc: Exception) -> DatabaseError:
    text = str(exc)
    holder = _LOCK_HOLDER.search(text)
    if holder or "Could not set lock" in text:
        who = f"process {holder['pid']} ({holder['program']})" if holder else "another process"
        return DatabaseError(
            f"{path} is in use by {who}; DuckDB allows one process per file. Stop that process "
            f"(a running `tracescore serve` answers queries through its API) or use another --db."
        )
    if "WAL" in text or "replay" in text.lower():
        return _unreplayable_wal(path, text)
    return DatabaseError(f"cannot open {path}: {text}")


def open_writer(
    path: Path, *, memory_limit: str | None = None, threads: int | None = None
) -> duckdb.DuckDBPyConnection:
    """The one read-write connection; creates or upgrades the schema."""
    path.parent.mkdir(parents=True, exist_ok=True)
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
    # Automatic checkpoints stall inserts for up to half a second; the writer checkpoints on a timer instead.
    connection.execute("SET checkpoint_threshold = '256MB'")
    for statement in create_tables_sql():
        execute_ddl(connection, statement)
    current = connection.execute("SELECT max(version) FROM schema_version").fetchone()
    stored = current[0] if current else None
    if stored is not None and stored > SCHEMA_VERSION:
        connection.close()
        raise DatabaseError(
            f"{path} has schema version {stored}, newer than this tracescore understands ({SCHEMA_VERSION}); "
            "upgrade tracescore."
        )
    if stored is None or stored < SCHEMA_VERSION:
        for version in range((stored or SCHEMA_VERSION) + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS.get(version, ()):
                connection.execute(statement)
        connection.execute("INSERT INTO schema_version (version) VALUES (?)", [SCHEMA_VERSION])
    # The views read the migrated tables: created only now.
    for statement in create_views_sql():
        execute_ddl(connection, statement)
    # The API's read-only SQL runs on this instance: no file or network access from SQL, ever
    # (settings are instance-wide; the writer itself only uses registered Arrow batches).
    connection.execute("SET enable_external_access = false")
    connection.execute("SET autoinstall_known_extensions = false")
    connection.execute("SET autoload_known_extensions = false")
    connection.execute("SET lock_configuration = true")  # nothing after this point may loosen it
    return connection


def open_reader(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection for the CLI when no server holds the file."""
    if not path.exists():
        raise DatabaseError(f"{path} does not exist; run `tracescore serve --db {path}` first, or pass --db")
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise explain_open_error(path, exc) from exc

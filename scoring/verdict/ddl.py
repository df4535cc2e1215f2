"""Creating tables whose columns ask for ZSTD, in any DuckDB file.

JSON text is most of what tracescore stores, and ZSTD keeps it several times smaller and cheaper to
checkpoint than DuckDB's default string compression (bench/README.md). A file whose storage format
predates per-column compression refuses the clause: those tables get the default instead.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

ZSTD = " USING COMPRESSION zstd"


def execute_ddl(connection: duckdb.DuckDBPyConnection, statement: str) -> None:
    try:
        connection.execute(statement)
    except duckdb.BinderException:
        if ZSTD not in statement:
            raise
        connection.execute(statement.replace(ZSTD, ""))


def supports_zstd(connection: duckdb.DuckDBPyConnection) -> bool:
    """Whether this file takes a ZSTD column, asked with a table made and dropped at once: inside a
    transaction a refused statement would end it, so a migration asks first."""
    probe = "tracescore_zstd_probe"
    try:
        connection.execute(f"CREATE TABLE {probe} (text VARCHAR{ZSTD})")
    except duckdb.BinderException:
        return False
    connection.execute(f"DROP TABLE {probe}")
    return True


def rebuild_table(
    connection: duckdb.DuckDBPyConnection, name: str, create: Callable[[str], str], *, zstd: bool
) -> None:
    """Replace table `name` by one made by `create` (the DDL for a given table name), its rows copied by
    name: how a constraint is dropped, which DuckDB cannot do in place. A column `name` has and `create`
    does not make (added by a later migration) is added to the copy with its type, so nothing is lost.
    Inside the caller's transaction, so `zstd` (`supports_zstd`) is asked before it; indexes on the
    table must be dropped first."""
    copy = f"{name}_rebuilt"
    statement = create(copy)
    connection.execute(f"DROP TABLE IF EXISTS {copy}")
    connection.execute(statement if zstd else statement.replace(ZSTD, ""))
    made = set(_columns(connection, copy))
    for column, data_type in _columns(connection, name).items():
        if column not in made:
            connection.execute(f'ALTER TABLE {copy} ADD COLUMN "{column}" {data_type}')
    connection.execute(f"INSERT INTO {copy} BY NAME SELECT * FROM {name}")
    connection.execute(f"DROP TABLE {name}")
    connection.execute(f"ALTER TABLE {copy} RENAME TO {name}")


def _columns(connection: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    rows = connection.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ? "
        "ORDER BY column_index",
        [table],
    ).fetchall()
    return {str(name): str(data_type) for name, data_type in rows}

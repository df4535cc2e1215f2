"""Creating tables whose columns ask for ZSTD, in any DuckDB file.

JSON text is most of what tracescore stores, and ZSTD keeps it several times smaller and cheaper to
checkpoint than DuckDB's default string compression (bench/README.md). A file whose storage format
predates per-column compression refuses the clause: those tables get the default instead.
"""

from __future__ import annotations

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

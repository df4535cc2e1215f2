"""Arrow tables as DuckDB views, for inserting or joining a batch in one statement."""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:  # only named here: importing pyarrow costs an idle server ~37 MB (issue 32)
    import pyarrow as pa


def register_arrow(connection: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> None:
    """`connection.register`, also after a query whose result was not read to its end.

    DuckDB 2 refuses to register a view while an earlier SELECT's result is unread, which a
    `fetchone()` leaves behind; whoever read it is done with it, so it is completed first."""
    complete = getattr(connection, "complete", None)  # DuckDB 2; earlier versions keep no such state
    if complete is not None:
        complete()
    connection.register(name, table)

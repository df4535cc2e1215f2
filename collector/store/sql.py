"""Read-only SQL over the stored tables: one SELECT-like statement, no file or network access."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from collector.store.database import DatabaseError, explain_open_error

# Statement types that only read. DESCRIBE, SHOW and SUMMARIZE parse as SELECT.
_READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


class SqlRefused(ValueError):
    """The statement would write, or is not one statement: refused before it runs."""


def check_read_only(connection: duckdb.DuckDBPyConnection, sql: str) -> None:
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error as exc:
        raise SqlRefused(f"cannot parse the query: {exc}") from exc
    if len(statements) != 1:
        raise SqlRefused(f"send exactly one statement (got {len(statements)})")
    kind = statements[0].type
    if kind not in _READ_ONLY:
        raise SqlRefused(
            f"only read-only queries are allowed (SELECT, WITH, DESCRIBE, SHOW, EXPLAIN); "
            f"this is a {kind.name} statement"
        )


def query_file(path: Path, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    if not path.exists():
        raise DatabaseError(f"{path} does not exist; run `tracescore serve --db {path}` first, or pass --db")
    try:
        connection = duckdb.connect(str(path), read_only=True, config={"enable_external_access": False})
    except duckdb.Error as exc:
        raise explain_open_error(path, exc) from exc
    try:
        check_read_only(connection, sql)
        try:
            result = connection.execute(sql)
            columns = [d[0] for d in result.description or []]
            return columns, result.fetchall()
        except duckdb.Error as exc:
            raise SqlRefused(f"query failed: {exc}") from exc
    finally:
        connection.close()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    return value


def format_rows(columns: list[str], rows: list[tuple[Any, ...]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(
            [{c: _plain(v) for c, v in zip(columns, row, strict=True)} for row in rows], indent=2, default=str
        )
    if fmt == "csv":
        import csv
        import io

        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(columns)
        writer.writerows([[_plain(v) for v in row] for row in rows])
        return buffer.getvalue().rstrip("\n")
    cells = [[("NULL" if v is None else str(_plain(v))) for v in row] for row in rows]
    widths = [min(60, max([len(c), *(len(r[i]) for r in cells)])) for i, c in enumerate(columns)]

    def line(values: list[str]) -> str:
        return "  ".join(v[:60].ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(columns), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)

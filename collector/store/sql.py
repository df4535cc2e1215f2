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
            f"this is {'an' if kind.name[0] in 'AEIOU' else 'a'} {kind.name} statement"
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


DEFAULT_MAX_WIDTH = 60  # characters of one table cell; the rest is cut, marked with "…"


def format_rows(
    columns: list[str], rows: list[tuple[Any, ...]], fmt: str, max_width: int = DEFAULT_MAX_WIDTH
) -> str:
    return render_rows(columns, rows, fmt, max_width)[0]


def render_rows(
    columns: list[str], rows: list[tuple[Any, ...]], fmt: str, max_width: int = DEFAULT_MAX_WIDTH
) -> tuple[str, int]:
    """The rows as `table`, `json` or `csv`, and how many table cells were cut to `max_width`
    characters (0 = no limit). JSON and CSV are never cut."""
    if fmt == "json":
        text = json.dumps(
            [{c: _plain(v) for c, v in zip(columns, row, strict=True)} for row in rows], indent=2, default=str
        )
        return text, 0
    if fmt == "csv":
        import csv
        import io

        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(columns)
        writer.writerows([[_plain(v) for v in row] for row in rows])
        return buffer.getvalue().rstrip("\n"), 0
    cells = [[("NULL" if v is None else str(_plain(v))) for v in row] for row in rows]
    limit = max_width if max_width > 0 else None
    cut = 0

    def fit(value: str) -> str:
        nonlocal cut
        if limit is None or len(value) <= limit:
            return value
        cut += 1
        return value[: max(limit - 1, 0)] + "…"

    head = [fit(c) for c in columns]
    body = [[fit(v) for v in row] for row in cells]
    widths = [max([len(h), *(len(r[i]) for r in body)]) for i, h in enumerate(head)]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(head), line(["-" * w for w in widths])]
    out.extend(line(r) for r in body)
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out), cut

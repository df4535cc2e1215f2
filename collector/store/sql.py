"""Read-only SQL over the stored tables: one SELECT-like statement, run where it cannot write.

Two layers. `check_read_only` (collector/store/_sql_statement.py) refuses, with one clear line, what is
not a single SELECT-like statement. `read_only` then runs that one statement inside
`BEGIN TRANSACTION READ ONLY` on a cursor of its own: DuckDB itself refuses every change to a table,
view, sequence, type, macro or schema there, so a statement the check got wrong fails on the database.
Only the parsed statement is executed, never the text: a `COMMIT` slipped through ends the read-only
transaction and nothing runs after it. The answer is capped in rows and in bytes as it is fetched.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import duckdb

from collector.store._sql_statement import SqlRefused, check_read_only, one_statement
from collector.store.database import DatabaseError, explain_open_error

__all__ = [  # SqlRefused and check_read_only are public here, from the private module that owns them
    "DEFAULT_MAX_WIDTH",
    "MAX_RESULT_BYTES",
    "MAX_RESULT_ROWS",
    "ResultTooLarge",
    "SqlRefused",
    "SqlResult",
    "check_read_only",
    "format_rows",
    "query_file",
    "read_only",
    "render_rows",
    "run_read_only",
]

MAX_RESULT_ROWS = 10_000  # rows the API returns; more are cut and the answer says `truncated`
# Bytes of values one answer may hold (about the size of its JSON): past it the query is refused, not
# cut, as a cut in bytes would end mid-row. 400 values of 1 MB once took the server to 1.56 GB.
MAX_RESULT_BYTES = 32 * 1024 * 1024
_FETCH_ROWS = 1024  # rows per fetch at most; fewer when rows are large (see _next_fetch)


class ResultTooLarge(SqlRefused):
    """The answer would hold more than the byte cap; refused before it was all fetched."""


@dataclass(frozen=True, slots=True)
class SqlResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool  # more rows than the row cap: `rows` holds the first ones


def read_only(
    cursor: duckdb.DuckDBPyConnection,
    sql: str,
    *,
    max_rows: int | None = MAX_RESULT_ROWS,
    max_bytes: int = MAX_RESULT_BYTES,
) -> SqlResult:
    """`sql`, checked (a clear refusal for what is not one SELECT-like statement), then run read-only.

    `cursor` must be a cursor of its own (`connection.cursor()`), closed by the caller afterwards: the
    statement may leave session state (a search path, a prepared statement) on it."""
    cursor.execute("BEGIN TRANSACTION READ ONLY")
    try:
        statement = check_read_only(cursor, sql)
        return _fetch(cursor, statement, max_rows, max_bytes)
    finally:
        _end(cursor)


def run_read_only(
    cursor: duckdb.DuckDBPyConnection,
    sql: str,
    *,
    max_rows: int | None = MAX_RESULT_ROWS,
    max_bytes: int = MAX_RESULT_BYTES,
) -> SqlResult:
    """The layer that keeps the data safe, without the statement check: the one statement of `sql`
    runs inside a read-only transaction, where any write fails on the database. Tests call it
    directly to prove that a write the check would miss cannot happen."""
    cursor.execute("BEGIN TRANSACTION READ ONLY")
    try:
        return _fetch(cursor, one_statement(cursor, sql), max_rows, max_bytes)
    finally:
        _end(cursor)


def _end(cursor: duckdb.DuckDBPyConnection) -> None:
    """Roll the read-only transaction back; a statement that ended it itself (COMMIT, ROLLBACK,
    ABORT) leaves none to roll back."""
    with contextlib.suppress(duckdb.TransactionException):
        cursor.execute("ROLLBACK")


def _fetch(
    cursor: duckdb.DuckDBPyConnection, statement: duckdb.Statement, max_rows: int | None, max_bytes: int
) -> SqlResult:
    try:
        result = cursor.execute(statement)
        columns = [d[0] for d in result.description or []]
        rows: list[tuple[Any, ...]] = []
        held = 0
        widest = 0  # the largest row seen, in bytes: it sizes the next fetch
        while max_rows is None or len(rows) <= max_rows:
            want = _next_fetch(max_bytes - held, widest)
            if max_rows is not None:
                want = min(want, max_rows + 1 - len(rows))
            chunk = result.fetchmany(want)
            if not chunk:
                break
            for row in chunk:
                size = _row_size(row)
                widest = max(widest, size)
                held += size
                if held > max_bytes:
                    raise ResultTooLarge(
                        f"the answer is larger than {max_bytes // (1024 * 1024)} MiB (the cap on one "
                        f"answer; {len(rows)} rows fit): select fewer columns, cut long values "
                        "(left(text, 200)), or add a WHERE or LIMIT; `tracescore export` writes whole "
                        "tables to Parquet"
                    )
                rows.append(row)
    except (duckdb.InterruptException, SqlRefused):  # SqlRefused: the byte cap, said as it is
        raise
    except (OverflowError, ValueError) as exc:  # a value Python cannot hold (INTERVAL 99999999 YEARS)
        raise SqlRefused(f"a value cannot be read ({exc}); cast it to VARCHAR") from exc
    except duckdb.Error as exc:
        if "read-only mode" in str(exc):
            raise SqlRefused(f"refused by the database: the SQL API only reads ({exc})") from exc
        raise SqlRefused(f"query failed: {exc}") from exc
    truncated = max_rows is not None and len(rows) > max_rows
    return SqlResult(columns, rows[:max_rows] if truncated else rows, truncated)


def _next_fetch(room: int, widest: int) -> int:
    """Rows to fetch next: one at first, then as many as fit an eighth of the room left at the widest
    row's size, so a fetch never holds much past the cap even when each row is megabytes."""
    if widest == 0:
        return 1
    return max(1, min(_FETCH_ROWS, room // (8 * widest)))


# What a value of these types takes in a JSON answer, about: looked up by exact type, the common case.
_FIXED_SIZE: dict[type, int] = {
    int: 8,
    float: 8,
    bool: 5,
    type(None): 4,
    datetime: 32,
    date: 12,
    time: 16,
    timedelta: 16,
    Decimal: 24,
    UUID: 38,
}


def _row_size(row: tuple[Any, ...]) -> int:
    """About what `row` takes in a JSON answer: a loop with a type lookup, as it runs for every row."""
    size = 2
    for value in row:
        kind = type(value)
        if kind is str:
            size += len(value) + 3
        else:
            fixed = _FIXED_SIZE.get(kind)
            size += (fixed if fixed is not None else _size(value)) + 1
    return size


def _size(value: Any) -> int:
    """About what any other value takes in a JSON answer: nested lists, structs and maps by their text
    (C speed; a little more than their JSON), blobs as hex."""
    if isinstance(value, bytes | bytearray | memoryview):
        return 2 * len(value) + 2
    return len(repr(value))


def query_file(path: Path, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """`tracescore sql` when no server holds the file: the same check, read-only transaction and byte
    cap as the API, on a connection opened read-only; every row (no row cap, as before)."""
    if not path.exists():
        raise DatabaseError(f"{path} does not exist; run `tracescore serve --db {path}` first, or pass --db")
    try:
        connection = duckdb.connect(str(path), read_only=True, config={"enable_external_access": False})
    except duckdb.Error as exc:
        raise explain_open_error(path, exc) from exc
    try:
        result = read_only(connection, sql, max_rows=None)
        return result.columns, result.rows
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


def _json_value(value: Any) -> Any:
    """`value` for `--format json`, nested values too; a MAP's keys that JSON cannot key by (dates,
    decimals, lists) become their text."""
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str | int | float | bool) or k is None else str(_plain(k))): _json_value(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return _plain(value)


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
            [{c: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows],
            indent=2,
            default=str,
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

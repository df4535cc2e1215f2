"""`tracescore doctor --db`: the instrumentation scopes the stored spans came from, and what each gave.

One line per scope (the most spans first, at most `LISTED`): how many spans, and how many gave a tool
execution. A scope none of whose spans did is a `warn`: either it records no tool calls (an HTTP client's
instrumentation), or it records them in a format tracescore does not read (docs/conventions.md, "Spans
tracescore does not read"). Read from the file, or through the SQL API of the `serve` holding it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from collector.cli._client import ServerError, discover, post
from collector.store.database import DatabaseError

LISTED = 20

SCOPES_SQL = """
SELECT coalesce(s.scope_name, '') AS scope_name, coalesce(s.scope_version, '') AS scope_version,
    count(*) AS spans, count(e.span_id) AS executing
FROM spans s
LEFT JOIN (SELECT DISTINCT trace_id, span_id FROM executions) e
    ON e.trace_id = s.trace_id AND e.span_id = s.span_id
GROUP BY ALL
ORDER BY spans DESC, scope_name, scope_version
"""


def _stored_scopes(db: Path) -> Sequence[Sequence[Any]] | None:
    server = discover(db, None)
    if server is not None:
        try:
            answer = post(server, "/api/v1/sql", {"query": SCOPES_SQL})
        except (ServerError, DatabaseError):
            return None
        rows = answer.get("rows") if isinstance(answer, dict) else None
        return rows if isinstance(rows, list) else None
    if not db.exists():
        return None
    try:
        with duckdb.connect(str(db), read_only=True) as connection:
            return connection.execute(SCOPES_SQL).fetchall()
    except duckdb.Error:
        return None  # the database check says why it does not open


def scope_lines(rows: Sequence[Sequence[Any]]) -> list[tuple[str, str, str]]:
    """(status, check, advice) for each scope listed, then one line for the scopes left out."""
    lines = []
    for name, version, spans, executing in rows[:LISTED]:
        label = f"scope {name} {version}".rstrip() if name else "spans with no scope"
        counted = f"{spans} span(s), {executing} gave tool executions"
        if executing:
            lines.append(("ok", label, counted))
        else:
            lines.append(
                (
                    "warn",
                    label,
                    f"{counted}: if it records your agent's tool calls, tracescore does not read it "
                    "(see docs/conventions.md)",
                )
            )
    if len(rows) > LISTED:
        left = rows[LISTED:]
        spans, executing = sum(int(r[2]) for r in left), sum(int(r[3]) for r in left)
        counted = f"{spans} span(s), {executing} gave tool executions"
        lines.append(("ok", f"{len(left)} more scope(s)", counted))
    return lines


def scope_findings(db: Path) -> list[tuple[str, str, str]]:
    rows = _stored_scopes(db)
    return scope_lines(rows) if rows else []

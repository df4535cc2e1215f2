"""What a failing run did and why it failed, for the report's failing runs (issue 28): the tool
executions stored for the run (tool, arguments, result, error, duration, agent path) and the checks and
gates its verdict did not satisfy, each with its reason. The HTML page opens a failing run to these.

Bounded, so a page of 500 failing runs stays a page: at most `MAX_EXECUTIONS` executions a run, the
first by start time, and arguments, results and error messages cut at `MAX_TEXT` characters (marked
with "…"); `executions_total` says how many there were.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import duckdb

from scoring.verdict.record import Verdict

MAX_EXECUTIONS = 50
MAX_TEXT = 400


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_TEXT:
        return text
    return text[: MAX_TEXT - 1] + "…"


def _json_text(value: Any) -> str | None:
    """A stored JSON value as compact text (DuckDB hands JSON columns over as their text)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return _cut(value)
    return _cut(json.dumps(value, separators=(", ", ": "), ensure_ascii=False, default=str))


def failed_checks(verdict: Verdict) -> list[dict[str, Any]]:
    """The gates and checks the verdict did not satisfy, each with its detail (the reason's parts)."""
    return [
        {"kind": c.kind, "target": c.target, "detail": c.detail, "gate": c in verdict.gates}
        for c in (*verdict.gates, *verdict.checks)
        if not c.satisfied
    ]


def run_executions(
    connection: duckdb.DuckDBPyConnection, run_ids: Sequence[str]
) -> dict[str, tuple[int, list[dict[str, Any]]]]:
    """run id -> (how many executions it has, the first `MAX_EXECUTIONS` of them by start time)."""
    if not run_ids:
        return {}
    rows = connection.execute(
        """
        SELECT run_id, total, tool_name, arguments, arguments_raw, result, error, error_type, error_message,
               paused, from_history, duration_ms, agent_path, span_id
        FROM (
            SELECT e.*, count(*) OVER (PARTITION BY e.run_id) AS total,
                   row_number() OVER (
                       PARTITION BY e.run_id ORDER BY e.start_time, e.span_id, e.call_index
                   ) AS n
            FROM executions e JOIN (SELECT unnest(?::VARCHAR[]) AS wanted) w ON e.run_id = w.wanted
        )
        WHERE n <= ?
        ORDER BY run_id, n
        """,
        [sorted(set(run_ids)), MAX_EXECUTIONS],
    ).fetchall()
    found: dict[str, tuple[int, list[dict[str, Any]]]] = {}
    for (
        run_id,
        total,
        tool,
        arguments,
        arguments_raw,
        result,
        error,
        error_type,
        error_message,
        paused,
        from_history,
        duration_ms,
        agent_path,
        span_id,
    ) in rows:
        listed = found.setdefault(run_id, (int(total), []))[1]
        listed.append(
            {
                "tool": tool,
                "arguments": _json_text(arguments) if arguments is not None else _cut(arguments_raw),
                "result": _json_text(result),
                "error": bool(error),
                "error_type": error_type,
                "error_message": _cut(error_message),
                "paused": bool(paused),
                "from_history": bool(from_history),
                "duration_ms": duration_ms,
                "agent_path": agent_path,
                "span_id": span_id,
            }
        )
    return found

"""Reads the APIs serve (HTTP and gRPC alike): plain functions of a DuckDB connection.

They run on their own cursor, in a worker thread, with a time limit: a slow query is interrupted,
never left to hold a thread.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import duckdb

from collector.store.sql import MAX_RESULT_BYTES, MAX_RESULT_ROWS, read_only
from scoring import TaskResult, Verdict, aggregate, verdict_from_dict
from scoring.report.build import task_latency

T = TypeVar("T")

MAX_ROWS = MAX_RESULT_ROWS  # rows any API answer returns at most


class QueryTimeout(RuntimeError):
    pass


def with_cursor(
    connection: duckdb.DuckDBPyConnection,
    read: Callable[[duckdb.DuckDBPyConnection], T],
    timeout_s: float,
    limit_s: float | None = None,
) -> T:
    """Run `read` on a fresh cursor; interrupt it when it takes longer than `timeout_s` (what is left
    of a limit of `limit_s` counted from the request's arrival, when given: the message names that)."""
    cursor = connection.cursor()
    timer = threading.Timer(timeout_s, cursor.interrupt)
    timer.start()
    try:
        return read(cursor)
    except duckdb.InterruptException as exc:
        raise QueryTimeout(f"query took longer than {limit_s or timeout_s:g} s and was stopped") from exc
    finally:
        timer.cancel()
        cursor.close()


def run_sql(
    cursor: duckdb.DuckDBPyConnection, sql: str, limit: int = MAX_ROWS, max_bytes: int = MAX_RESULT_BYTES
) -> dict[str, Any]:
    """A person's SQL: checked, then run in a read-only transaction (collector/store/sql.py), capped at
    `limit` rows (more are cut, `truncated` says so) and `max_bytes` (more is refused)."""
    result = read_only(cursor, sql, max_rows=limit, max_bytes=max_bytes)
    return {"columns": result.columns, "rows": [list(r) for r in result.rows], "truncated": result.truncated}


def _where(filters: dict[str, Any]) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for clause, value in filters.items():
        if value is not None and value != "":
            clauses.append(clause)
            params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def verdicts(
    cursor: duckdb.DuckDBPyConnection,
    *,
    run: str | None = None,
    task: str | None = None,
    spec: str | None = None,
    label: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    all_versions: bool = False,
    limit: int | None = 1000,
) -> list[dict[str, Any]]:
    """Stored verdicts, oldest first; at most `limit` (capped at MAX_ROWS), or every one when None."""
    where, params = _where(
        {
            "run_id = ?": run,
            "task_id = ?": task,
            "spec = ?": spec,
            "label = ?": label,
            "scored_at >= ?": since,
            "scored_at < ?": until,
        }
    )
    latest = (
        ""
        if all_versions
        else (
            " QUALIFY row_number() OVER "
            "(PARTITION BY run_id, spec ORDER BY run_version DESC, scored_at DESC) = 1"
        )
    )
    bounded = " LIMIT ?" if limit is not None else ""
    if limit is not None:
        params.append(min(limit, MAX_ROWS))
    rows = cursor.execute(
        f"SELECT verdict, scored_at FROM verdicts{where}{latest} ORDER BY scored_at, run_id, spec{bounded}",
        params,
    ).fetchall()
    out = []
    for verdict, scored_at in rows:
        data = json.loads(verdict)
        data["scored_at"] = scored_at.isoformat() + "Z"
        out.append(data)
    return out


def task_results(
    cursor: duckdb.DuckDBPyConnection,
    *,
    task: str | None = None,
    spec: str | None = None,
    k: int | None = None,
) -> list[TaskResult]:
    """Aggregates over the latest stored verdict of each (run, spec), with what each task's clean
    executions took (`execution_latency`), as `tracescore report` gives them."""
    # Every verdict: the MAX_ROWS cap is for rows sent to a client; an aggregate over the first
    # MAX_ROWS verdicts only would be silently wrong once a server has scored more runs than that.
    stored = [verdict_from_dict(v) for v in verdicts(cursor, task=task, spec=spec, limit=None)]
    return task_latency(cursor, aggregate(stored, k=k), stored)


def stored_verdicts(cursor: duckdb.DuckDBPyConnection, **filters: Any) -> list[Verdict]:
    return [verdict_from_dict(v) for v in verdicts(cursor, **filters)]


def runs(
    cursor: duckdb.DuckDBPyConnection,
    *,
    task: str | None = None,
    status: str | None = None,
    since: datetime | None = None,
    limit: int = 1000,
) -> list[dict[str, Any]]:
    where, params = _where({"task_id = ?": task, "status = ?": status, "completed_at >= ?": since})
    result = cursor.execute(
        "SELECT run_id, trace_id, n_traces, task_id, service_name, agent_name, session_id, start_time, "
        "end_time, duration_ms, n_spans, n_executions, n_requests, status, version, completed_at "
        f"FROM runs{where} "
        "ORDER BY completed_at DESC LIMIT ?",
        [*params, min(limit, MAX_ROWS)],
    )
    columns = [d[0] for d in result.description or []]
    return [
        {c: (v.isoformat() if isinstance(v, datetime) else v) for c, v in zip(columns, row, strict=True)}
        for row in result.fetchall()
    ]

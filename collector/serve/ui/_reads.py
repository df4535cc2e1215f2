"""The reads behind the live UI's pages, each bounded whatever the database holds.

A page of runs is one pass over `run_traces`' small columns, newest completion first, cut by a keyset
cursor (the last row's completion time and run id), never an OFFSET that grows with the page number;
labels come from the verdicts of that page's runs only. A run, a conversation: looked up through the
run and conversation indexes, their executions and requests through the run's `ingest_seq` range,
which DuckDB's per-row-group min/max prunes to the few row groups holding them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from scoring.report.build import pass_rate_history, tool_latency
from scoring.spec.window import RunWindow, window_run_ids

MAX_PAGE = 200


@dataclass(frozen=True, slots=True)
class RunFilter:
    task: str | None = None
    spec: str | None = None
    label: str | None = None  # pass, fail or error: the latest verdict of `spec` (of any spec without)
    service: str | None = None
    since: datetime | None = None  # the run's start, as --since reads it
    until: datetime | None = None
    where: tuple[tuple[str, str], ...] = field(default=())  # --where KEY=VALUE (version is service.version)


@dataclass(frozen=True, slots=True)
class Cursor:
    completed_at: datetime
    run_id: str

    def text(self) -> str:
        return f"{self.completed_at.isoformat()}|{self.run_id}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        moment, _, run_id = text.partition("|")
        return cls(datetime.fromisoformat(moment), run_id)


def _iso(value: Any) -> Any:
    return value.isoformat() + "Z" if isinstance(value, datetime) else value


def _has(cursor: duckdb.DuckDBPyConnection, table: str) -> bool:
    row = cursor.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]
    ).fetchone()
    return bool(row and row[0])


def _latest_verdicts(cursor: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The latest verdict of each (run, spec) of these runs, whole, as stored."""
    if not run_ids or not _has(cursor, "verdicts"):
        return []
    rows = cursor.execute(
        "SELECT v.verdict, v.scored_at FROM verdicts v SEMI JOIN (SELECT unnest(?::VARCHAR[]) AS wanted) w "
        "ON v.run_id = w.wanted WHERE v.conversation_id IS NULL "
        "QUALIFY row_number() OVER (PARTITION BY v.run_id, v.spec ORDER BY v.run_version DESC, "
        "v.scored_at DESC) = 1 ORDER BY v.run_id, v.spec",
        [list(run_ids)],
    ).fetchall()
    out = []
    for text, scored_at in rows:
        verdict = json.loads(text)
        verdict["scored_at"] = _iso(scored_at)
        out.append(verdict)
    return out


def runs_page(
    cursor: duckdb.DuckDBPyConnection, chosen: RunFilter, after: Cursor | None, limit: int
) -> dict[str, Any]:
    """One page of runs, newest completion first, each with its latest label per spec; `next` is the
    cursor of the following page (None on the last)."""
    if not _has(cursor, "run_traces"):
        return {"runs": [], "next": None}
    clauses, params = [], list[Any]()  # WHERE's, then HAVING's parameters (their order in the text)
    for clause, value in (("task_id = ?", chosen.task), ("service_name = ?", chosen.service)):
        if value:
            clauses.append(clause)
            params.append(value)
    if chosen.where:
        # `--where` as `score --where` reads it (scoring/spec/window.py): the same function picks the runs.
        window = RunWindow.of(chosen.since, chosen.until, chosen.where)
        clauses.append("run_id IN (SELECT unnest(?::VARCHAR[]))")
        params.append(window_run_ids(cursor, window, task_id=chosen.task))
    if chosen.label or chosen.spec:
        if not _has(cursor, "verdicts"):
            return {"runs": [], "next": None}
        spec = " AND spec = ?" if chosen.spec else ""
        label = " WHERE label = ?" if chosen.label else ""
        clauses.append(
            "run_id IN (SELECT run_id FROM (SELECT run_id, label FROM verdicts WHERE conversation_id IS NULL"
            f"{spec} QUALIFY row_number() OVER (PARTITION BY run_id, spec "
            f"ORDER BY run_version DESC, scored_at DESC) = 1){label})"
        )
        params.extend(v for v in (chosen.spec, chosen.label) if v)
    having = []
    if chosen.since is not None:
        having.append("min(start_time) >= ?")
        params.append(chosen.since)
    if chosen.until is not None:
        having.append("min(start_time) < ?")
        params.append(chosen.until)
    if after is not None:
        having.append("(max(completed_at) < ? OR (max(completed_at) = ? AND run_id < ?))")
        params.extend([after.completed_at, after.completed_at, after.run_id])
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    grouped = f" HAVING {' AND '.join(having)}" if having else ""
    rows = cursor.execute(
        "SELECT run_id, min(trace_id), any_value(task_id), any_value(service_name), any_value(agent_name), "
        "min(start_time), max(end_time), sum(n_executions)::BIGINT, sum(n_requests)::BIGINT, "
        "CASE WHEN bool_or(status = 'open') THEN 'open' ELSE 'complete' END, max(completed_at) "
        f"FROM run_traces{where} GROUP BY run_id{grouped} "
        "ORDER BY max(completed_at) DESC, run_id DESC LIMIT ?",
        [*params, min(limit, MAX_PAGE) + 1],
    ).fetchall()
    more = len(rows) > min(limit, MAX_PAGE)
    rows = rows[: min(limit, MAX_PAGE)]
    labels: dict[str, list[dict[str, Any]]] = {}
    for verdict in _latest_verdicts(cursor, [r[0] for r in rows]):
        labels.setdefault(verdict["run_id"], []).append(
            {"spec": verdict["spec"], "label": verdict["label"], "reason": verdict.get("reason")}
        )
    runs = []
    for run_id, trace_id, task, service, agent, start, end, n_exec, n_req, status, completed in rows:
        runs.append(
            {
                "run_id": run_id,
                "trace_id": trace_id,
                "task_id": task,
                "service_name": service,
                "agent_name": agent,
                "start_time": _iso(start),
                "end_time": _iso(end),
                "duration_ms": (end - start).total_seconds() * 1000 if start and end else None,
                "n_executions": n_exec,
                "n_requests": n_req,
                "status": status,
                "completed_at": _iso(completed),
                "verdicts": labels.get(run_id, []),
            }
        )
    last = rows[-1] if rows and more else None
    return {"runs": runs, "next": Cursor(last[10], last[0]).text() if last else None}


def _rows(result: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    columns = [d[0] for d in result.description or []]
    return [{c: _iso(v) for c, v in zip(columns, row, strict=True)} for row in result.fetchall()]


def _json_value(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def run_detail(cursor: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    """One run: its traces, its executions in order (each with the request it answers), the requests no
    execution answered, and the latest verdict of each spec (every check with its reason)."""
    if not _has(cursor, "run_traces"):
        return None
    traces = _rows(
        cursor.execute(
            "SELECT trace_id, task_id, service_name, agent_name, session_id, start_time, end_time, "
            "n_spans, n_executions, n_requests, status, version, completed_at, attributes, min_seq, max_seq "
            "FROM run_traces WHERE run_id = ? ORDER BY start_time, trace_id",
            [run_id],
        )
    )
    if not traces:
        return None
    trace_ids = [t["trace_id"] for t in traces]
    low, high = min(t["min_seq"] for t in traces), max(t["max_seq"] for t in traces)
    # The run's rows lie in its ingest_seq range: the row groups outside it are skipped unread.
    scope = "run_id = ? AND trace_id IN (SELECT unnest(?::VARCHAR[])) AND ingest_seq BETWEEN ? AND ?"
    executions = _rows(
        cursor.execute(
            "SELECT e.trace_id, e.span_id, e.call_index, e.kind, e.tool_name, e.call_id, e.arguments, "
            "e.arguments_raw, e.arguments_error, e.result, e.error, e.error_type, e.error_message, e.paused, "
            "e.pause_reason, e.from_history, e.start_time, e.end_time, e.duration_ms, e.agent_path, "
            "e.agent_name, r.span_id AS request_span_id, r.position AS request_position, "
            "r.round AS request_round, r.requested_at AS requested_at "
            f"FROM (SELECT * FROM executions WHERE {scope}) e "
            f"LEFT JOIN (SELECT * FROM tool_requests WHERE {scope}) r "
            "ON r.execution_span_id = e.span_id AND r.trace_id = e.trace_id "
            "AND coalesce(r.execution_call_index, 0) = e.call_index "
            "ORDER BY e.start_time, e.span_id, e.call_index",
            [run_id, trace_ids, low, high] * 2,
        )
    )
    for execution in executions:
        for key in ("arguments", "result"):
            execution[key] = _json_value(execution[key])
    unanswered = _rows(
        cursor.execute(
            "SELECT trace_id, span_id, position, tool_name, call_id, arguments, arguments_raw, round, "
            f"requested_at, agent_path FROM tool_requests WHERE {scope} AND execution_span_id IS NULL "
            "ORDER BY requested_at, span_id, position",
            [run_id, trace_ids, low, high],
        )
    )
    for request in unanswered:
        request["arguments"] = _json_value(request["arguments"])
    conversation = None
    if _has(cursor, "run_turns"):
        found = cursor.execute(
            "SELECT conversation_id, max(turn_index) FROM run_turns WHERE run_id = ? GROUP BY ALL", [run_id]
        ).fetchone()
        conversation = {"conversation_id": found[0], "turn_index": found[1]} if found else None
    for t in traces:
        t["attributes"] = _json_value(t["attributes"])
        del t["min_seq"], t["max_seq"]
    return {
        "run_id": run_id,
        "traces": traces,
        "conversation": conversation,
        "executions": executions,
        "requested_never_executed": unanswered,
        "verdicts": _latest_verdicts(cursor, [run_id]),
    }


def task_detail(cursor: duckdb.DuckDBPyConnection, task: str, bucket: str = "auto") -> dict[str, Any]:
    """A task's pass rate over time per spec and the clean durations of its tools, as the report gives
    them (scoring/report/build.py); its pass@k and pass^k are `GET /api/v1/tasks?task=`."""
    if not _has(cursor, "verdicts"):
        return {"task": task, "history_bucket": bucket, "history": [], "tool_latency": []}
    specs = [
        row[0]
        for row in cursor.execute(
            "SELECT DISTINCT spec FROM verdicts WHERE task_id = ? AND conversation_id IS NULL ORDER BY spec",
            [task],
        ).fetchall()
    ]
    chosen, history = pass_rate_history(cursor, specs, task=task, bucket=bucket)
    run_ids = [
        row[0]
        for row in cursor.execute(
            "SELECT DISTINCT run_id FROM verdicts WHERE task_id = ? AND conversation_id IS NULL", [task]
        ).fetchall()
    ]
    return {
        "task": task,
        "specs": specs,
        "history_bucket": chosen,
        "history": history,
        "tool_latency": tool_latency(cursor, run_ids),
    }


def conversation_detail(cursor: duckdb.DuckDBPyConnection, conversation_id: str) -> dict[str, Any] | None:
    """A conversation's turns in order, each run with its latest verdicts, and the conversation's own
    verdicts (their per-turn results)."""
    if not _has(cursor, "run_turns"):
        return None
    turns = _rows(
        cursor.execute(
            "WITH t AS (SELECT run_id, max(turn_index) AS turn_index, bool_or(last_turn) AS last_turn "
            "FROM run_turns WHERE conversation_id = ? GROUP BY run_id) "
            "SELECT t.run_id, t.turn_index, t.last_turn, any_value(r.task_id) AS task_id, "
            "min(r.start_time) AS start_time, max(r.end_time) AS end_time, min(r.trace_id) AS trace_id, "
            "sum(r.n_executions)::BIGINT AS n_executions "
            "FROM t JOIN run_traces r ON r.run_id = t.run_id GROUP BY ALL "
            "ORDER BY t.turn_index NULLS LAST, min(r.start_time), t.run_id",
            [conversation_id],
        )
    )
    if not turns:
        return None
    verdicts = _latest_verdicts(cursor, [t["run_id"] for t in turns])
    for turn in turns:
        turn["verdicts"] = [v for v in verdicts if v["run_id"] == turn["run_id"]]
    own: list[dict[str, Any]] = []
    if _has(cursor, "verdicts"):
        for text, scored_at in cursor.execute(
            "SELECT verdict, scored_at FROM verdicts WHERE run_id = ? AND conversation_id = ? "
            "QUALIFY row_number() OVER (PARTITION BY spec ORDER BY run_version DESC, scored_at DESC) = 1 "
            "ORDER BY spec",
            [conversation_id, conversation_id],
        ).fetchall():
            verdict = json.loads(text)
            verdict["scored_at"] = _iso(scored_at)
            own.append(verdict)
    return {"conversation_id": conversation_id, "turns": turns, "verdicts": own}

"""The live UI's reads of one thing: a run, a task, a conversation (collector/serve/ui/_reads.py has
the pages of runs and what both share).

A run is looked up through `run_keys` and a conversation by id in `run_turns` (no table that grows with
the history has an index: scoring/evidence/run_keys.py), a run's executions and requests through its
`ingest_seq` range, which DuckDB's per-row-group min/max prunes to the few row groups holding them.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import duckdb

from collector.serve.ui._reads import has_table, iso, latest_verdicts
from scoring.evidence.run_keys import seq_range, within
from scoring.report.build import pass_rate_history, tool_latency


def _rows(result: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    columns = [d[0] for d in result.description or []]
    return [{c: iso(v) for c, v in zip(columns, row, strict=True)} for row in result.fetchall()]


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
    if not has_table(cursor, "run_traces"):
        return None
    condition, bounds = within(seq_range(cursor, [run_id], "run_key"))
    traces = _rows(
        cursor.execute(
            "SELECT trace_id, task_id, service_name, agent_name, session_id, start_time, end_time, "
            "n_spans, n_executions, n_requests, status, version, completed_at, attributes, min_seq, max_seq "
            f"FROM run_traces WHERE {condition} AND run_id = ? ORDER BY start_time, trace_id",
            [*bounds, run_id],
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
    if has_table(cursor, "run_turns"):
        found = cursor.execute(
            "SELECT conversation_id, max(turn_index) FROM run_turns WHERE run_id = ? GROUP BY ALL", [run_id]
        ).fetchone()
        conversation = {"conversation_id": found[0], "turn_index": found[1]} if found else None
    completed = datetime.fromisoformat(max(t["completed_at"] for t in traces).removesuffix("Z"))
    for t in traces:
        t["attributes"] = _json_value(t["attributes"])
        del t["min_seq"], t["max_seq"]
    return {
        "run_id": run_id,
        "traces": traces,
        "conversation": conversation,
        "executions": executions,
        "requested_never_executed": unanswered,
        "verdicts": latest_verdicts(cursor, [run_id], completed_since=completed),
    }


def task_detail(cursor: duckdb.DuckDBPyConnection, task: str, bucket: str = "auto") -> dict[str, Any]:
    """A task's pass rate over time per spec and the clean durations of its tools, as the report gives
    them (scoring/report/build.py); its pass@k and pass^k are `GET /api/v1/tasks?task=`."""
    if not has_table(cursor, "verdicts"):
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
    if not has_table(cursor, "run_turns"):
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
    verdicts = latest_verdicts(cursor, [t["run_id"] for t in turns])
    for turn in turns:
        turn["verdicts"] = [v for v in verdicts if v["run_id"] == turn["run_id"]]
    own: list[dict[str, Any]] = []
    if has_table(cursor, "verdicts"):
        for text, scored_at in cursor.execute(
            "SELECT verdict, scored_at FROM verdicts WHERE run_id = ? AND conversation_id = ? "
            "QUALIFY row_number() OVER (PARTITION BY spec ORDER BY run_version DESC, scored_at DESC) = 1 "
            "ORDER BY spec",
            [conversation_id, conversation_id],
        ).fetchall():
            verdict = json.loads(text)
            verdict["scored_at"] = iso(scored_at)
            own.append(verdict)
    return {"conversation_id": conversation_id, "turns": turns, "verdicts": own}

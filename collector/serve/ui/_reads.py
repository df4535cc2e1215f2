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
from datetime import datetime, timedelta
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


def _in_list(column: str, values: Sequence[Any]) -> str:
    """`column IN (?, ?, …)`: a list of constants DuckDB checks in the scan itself, skipping the row
    groups' other columns, where a join on an unnested list would read them all first."""
    return f"{column} IN ({', '.join('?' * len(values))})" if values else "false"


def _latest_verdicts(
    cursor: duckdb.DuckDBPyConnection,
    run_ids: Sequence[str],
    whole: bool = True,
    completed_since: datetime | None = None,
) -> list[dict[str, Any]]:
    """The latest verdict of each (run, spec) of these runs: whole, as stored, or (`whole` false, for a
    page of runs) its spec, label and reason only, without reading the verdicts' JSON."""
    if not run_ids or not _has(cursor, "verdicts"):
        return []
    columns = "verdict, scored_at" if whole else "run_id, spec, label, reason"

    def read(ids: Sequence[str], since: datetime | None) -> list[tuple[Any, ...]]:
        recent = " AND scored_at >= ?" if since is not None else ""
        return cursor.execute(
            f"SELECT {columns} FROM verdicts WHERE {_in_list('run_id', ids)} AND conversation_id IS NULL"
            f"{recent} QUALIFY row_number() OVER (PARTITION BY run_id, spec ORDER BY run_version DESC, "
            "scored_at DESC) = 1 ORDER BY run_id, spec",
            [*ids, *([since] if since is not None else [])],
        ).fetchall()

    if whole or completed_since is None:
        rows = read(run_ids, None)
    else:
        # A run's latest verdict was judged after its last completion: for a page of recent runs only the
        # recent row groups of `verdicts` are read (a day's margin for clocks). Runs with none there
        # (not scored yet, or only an older version of them) are then looked up everywhere.
        rows = read(run_ids, completed_since - timedelta(days=1))
        found = {r[0] for r in rows}
        missing = [r for r in run_ids if r not in found]
        if missing:
            rows = sorted([*rows, *read(missing, None)], key=lambda r: (r[0], r[1]))
    if not whole:
        return [
            {"run_id": r, "spec": spec, "label": label, "reason": reason} for r, spec, label, reason in rows
        ]
    out = []
    for text, scored_at in rows:
        verdict = json.loads(text)
        verdict["scored_at"] = _iso(scored_at)
        out.append(verdict)
    return out


# A page is found among the newest rows of `run_traces` (one per trace of a run), by rounds of this many
# rows at most: each round is one top-N pass, and a filter that matches few runs takes several.
_ROUND_ROWS = 4_000
_MAX_ROUNDS = 12
_RUN_COLUMNS = (
    "run_id, min(trace_id), any_value(task_id), any_value(service_name), any_value(agent_name), "
    "min(start_time), max(end_time), sum(n_executions)::BIGINT, sum(n_requests)::BIGINT, "
    "CASE WHEN bool_or(status = 'open') THEN 'open' ELSE 'complete' END, max(completed_at)"
)


def _labelled(chosen: RunFilter) -> tuple[str, list[Any]]:
    """Runs whose latest verdict (of `spec`, or of any spec) has `label`; or that have a verdict of
    `spec`. Candidates by label first (a narrow scan), then only those a newer verdict does not replace."""
    wanted, params = ["v.conversation_id IS NULL"], list[Any]()
    for clause, value in (("v.spec = ?", chosen.spec), ("v.label = ?", chosen.label)):
        if value:
            wanted.append(clause)
            params.append(value)
    newer = (
        "NOT EXISTS (SELECT 1 FROM verdicts n WHERE n.run_id = v.run_id AND n.spec = v.spec "
        "AND n.conversation_id IS NULL AND (n.run_version > v.run_version OR "
        "(n.run_version = v.run_version AND n.scored_at > v.scored_at)))"
    )
    return f"run_id IN (SELECT v.run_id FROM verdicts v WHERE {' AND '.join(wanted)} AND {newer})", params


def runs_page(
    cursor: duckdb.DuckDBPyConnection, chosen: RunFilter, after: Cursor | None, limit: int
) -> dict[str, Any]:
    """One page of runs, newest completion first (a run's last completed trace places it), each with
    its latest label per spec; `next` is the cursor of the following page (None on the last).

    Rows of `run_traces` are taken newest first, a round at a time (a top-N pass, no grouping of every
    run); each candidate run is then read whole, by its id, and kept where the row is its last
    completion and its start is in the window. The window cuts rows by their own start first: a run of
    several traces is judged by its earliest start, as `--since` judges it."""
    if not _has(cursor, "run_traces"):
        return {"runs": [], "next": None}
    size = min(limit, MAX_PAGE)
    clauses, params = [], list[Any]()
    for clause, value in (
        ("task_id = ?", chosen.task),
        ("service_name = ?", chosen.service),
        ("start_time < ?", chosen.until),
    ):
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
        clause, labelled = _labelled(chosen)
        clauses.append(clause)
        params.extend(labelled)
    kept: list[tuple[Any, ...]] = []
    position, scanned_to = after, None
    for round_number in range(_MAX_ROUNDS):
        wanted = min(_ROUND_ROWS, (size + 1) * 2**round_number)  # rounds grow while the filter is rare
        keyset = ["(completed_at < ? OR (completed_at = ? AND run_id < ?))"] if position else []
        where = " AND ".join([*clauses, *keyset]) or "true"
        where_params = [
            *params,
            *([position.completed_at, position.completed_at, position.run_id] if position else []),
        ]
        # The round's oldest completion first, from the one timestamp column: bounded by it, the rows'
        # ids are read only from the row groups holding the round (their min/max prune the others).
        oldest = cursor.execute(
            f"SELECT completed_at FROM run_traces WHERE {where} ORDER BY completed_at DESC LIMIT 1 OFFSET ?",
            [*where_params, wanted - 1],
        ).fetchone()
        bound = " AND completed_at >= ?" if oldest else ""
        rows = cursor.execute(
            f"SELECT run_id, completed_at FROM run_traces WHERE {where}{bound} "
            "ORDER BY completed_at DESC, run_id DESC LIMIT ?",
            [*where_params, *([oldest[0]] if oldest else []), wanted],
        ).fetchall()
        ids = list(dict.fromkeys(r[0] for r in rows))
        whole = {
            r[0]: r
            for r in cursor.execute(
                f"SELECT {_RUN_COLUMNS} FROM run_traces WHERE {_in_list('run_id', ids)} GROUP BY run_id", ids
            ).fetchall()
        }
        seen = {r[0] for r in kept}
        for run_id, completed_at in rows:
            run = whole.get(run_id)
            if run is None or run_id in seen or run[10] != completed_at:
                continue  # read twice, or not its last completion: it is placed by that one
            if (chosen.since is not None and run[5] < chosen.since) or (
                chosen.until is not None and run[5] >= chosen.until
            ):
                continue
            kept.append(run)
            seen.add(run_id)
            if len(kept) > size:
                break
        if len(kept) > size or len(rows) < wanted:
            break
        position = Cursor(rows[-1][1], rows[-1][0])
    else:
        # A rare filter over a long history: this page ends where the scan stopped, and `next` goes on
        # from there (a page may hold fewer runs than asked, never skip one).
        scanned_to = position
    more = len(kept) > size
    kept = kept[:size]
    if more:
        scanned_to = Cursor(kept[-1][10], kept[-1][0])
    labels: dict[str, list[dict[str, Any]]] = {}
    earliest = min((r[10] for r in kept), default=None)
    for verdict in _latest_verdicts(cursor, [r[0] for r in kept], whole=False, completed_since=earliest):
        labels.setdefault(verdict.pop("run_id"), []).append(verdict)
    runs = []
    for run_id, trace_id, task, service, agent, start, end, n_exec, n_req, status, completed in kept:
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
    return {"runs": runs, "next": scanned_to.text() if scanned_to else None}


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

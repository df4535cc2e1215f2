"""The live UI's pages of runs, each bounded whatever the database holds, and what its other reads
(collector/serve/ui/_details.py) share.

A page of runs is found among the newest rows of `run_traces` by top-N passes, cut by a keyset cursor
(the last run's completion time and id), never an OFFSET that grows with the page number; labels come
from the verdicts of that page's runs only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import duckdb

from scoring.evidence.runs import Run
from scoring.spec.select import selects

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


def iso(value: Any) -> Any:
    return value.isoformat() + "Z" if isinstance(value, datetime) else value


def has_table(cursor: duckdb.DuckDBPyConnection, table: str) -> bool:
    # The catalog functions: information_schema costs tens of milliseconds a look on a large file.
    row = cursor.execute(
        "SELECT (SELECT count(*) FROM duckdb_tables() WHERE table_name = ?) "
        "+ (SELECT count(*) FROM duckdb_views() WHERE view_name = ?)",
        [table, table],
    ).fetchone()
    return bool(row and row[0])


def in_list(column: str, values: Sequence[Any]) -> str:
    """`column IN (?, ?, …)`: a list of constants DuckDB checks in the scan itself, skipping the row
    groups' other columns, where a join on an unnested list would read them all first."""
    return f"{column} IN ({', '.join('?' * len(values))})" if values else "false"


def latest_verdicts(
    cursor: duckdb.DuckDBPyConnection,
    run_ids: Sequence[str],
    whole: bool = True,
    completed_since: datetime | None = None,
    stored: bool | None = None,
) -> list[dict[str, Any]]:
    """The latest verdict of each (run, spec) of these runs: whole, as stored, or (`whole` false, for a
    page of runs) its spec, label and reason only, without reading the verdicts' JSON. `stored`: whether
    the verdicts table exists, when the caller knows."""
    if not run_ids or not (has_table(cursor, "verdicts") if stored is None else stored):
        return []
    columns = "run_id, spec, " + ("verdict, scored_at" if whole else "label, reason")

    def read(ids: Sequence[str], since: datetime | None) -> list[tuple[Any, ...]]:
        recent = " AND scored_at >= ?" if since is not None else ""
        return cursor.execute(
            f"SELECT {columns} FROM verdicts WHERE {in_list('run_id', ids)} AND conversation_id IS NULL"
            f"{recent} QUALIFY row_number() OVER (PARTITION BY run_id, spec ORDER BY run_version DESC, "
            "scored_at DESC) = 1 ORDER BY run_id, spec",
            [*ids, *([since] if since is not None else [])],
        ).fetchall()

    if completed_since is None:
        rows = read(run_ids, None)
    else:
        # A run's latest verdict was judged after its last completion: for a page of recent runs only the
        # recent row groups of `verdicts` are read (an hour's margin for clocks). Runs with none there
        # (not scored yet, or only an older version of them) are then looked up everywhere.
        rows = read(run_ids, completed_since - timedelta(hours=1))
        found = {r[0] for r in rows}
        missing = [r for r in run_ids if r not in found]
        if missing:
            rows = sorted([*rows, *read(missing, None)], key=lambda r: (r[0], r[1]))
    if not whole:
        return [
            {"run_id": r, "spec": spec, "label": label, "reason": reason} for r, spec, label, reason in rows
        ]
    out = []
    for _, _, text, scored_at in rows:
        verdict = json.loads(text)
        verdict["scored_at"] = iso(scored_at)
        out.append(verdict)
    return out


# A page is found among the newest rows of `run_traces` (one per trace of a run), by rounds that grow
# while the filters are rare: each round is one top-N pass. A filter matching few runs in a long history
# ends its page after the last round (fewer runs, and `next` going on from where it stopped).
_ROUND_ROWS = 4_000
_MAX_ROUNDS = 12
_RUN_COLUMNS = (
    "run_id, min(trace_id), any_value(task_id), any_value(service_name), any_value(agent_name), "
    "min(start_time), max(end_time), sum(n_executions)::BIGINT, sum(n_requests)::BIGINT, "
    "CASE WHEN bool_or(status = 'open') THEN 'open' ELSE 'complete' END, max(completed_at), "
    "any_value(session_id), any_value(attributes)"
)
# One trace's row in the same positions, for the rounds: a run of several traces is folded only once on
# its page (`_whole`).
_ROW_COLUMNS = (
    "run_id, trace_id, task_id, service_name, agent_name, start_time, end_time, n_executions, n_requests, "
    "status, completed_at, session_id, attributes"
)
_COMPLETED, _START = 10, 5  # positions in both


def _matches(chosen: RunFilter, run: tuple[Any, ...], labels: list[dict[str, Any]]) -> bool:
    """The filters a round's candidates are checked against in Python: `--where` with `select`'s own
    function (on the run's last completed trace), and the latest label of a spec."""
    if chosen.where:
        select: dict[str, list[str]] = {}
        for key, value in chosen.where:
            select.setdefault(key, []).append(value)
        attributes = json.loads(run[12]) if isinstance(run[12], str) else None
        candidate = Run(
            run_id=run[0],
            trace_id=run[1],
            task_id=run[2],
            service_name=run[3],
            agent_name=run[4],
            session_id=run[11],
            version=0,
            attributes=attributes if isinstance(attributes, dict) else {},
        )
        if not selects(select, candidate):
            return False
    if chosen.spec or chosen.label:
        return any(chosen.spec in (None, v["spec"]) and chosen.label in (None, v["label"]) for v in labels)
    return True


def _round(
    cursor: duckdb.DuckDBPyConnection,
    clauses: list[str],
    params: list[Any],
    position: Cursor | None,
    rows: int,
) -> tuple[list[tuple[Any, ...]], set[str]]:
    """The next `rows` rows of `run_traces` newest first after `position`, and the ids of the runs each
    places (by their last completion)."""
    # Bounds on the completion alone (a timestamp column): DuckDB's per-row-group min/max prune by them.
    # First the round's oldest completion, counting the rows of the position's own instant that come
    # before it (already listed), then the round's rows, read only from the row groups holding them.
    base = " AND ".join(clauses) or "true"
    up_to, up_to_params = (" AND completed_at <= ?", [position.completed_at]) if position else ("", [])
    listed = 0
    if position is not None:
        counted = cursor.execute(
            f"SELECT count(*) FROM run_traces WHERE {base} AND completed_at = ? AND run_id >= ?",
            [*params, position.completed_at, position.run_id],
        ).fetchone()
        listed = int(counted[0]) if counted else 0
    oldest = cursor.execute(
        f"SELECT completed_at FROM run_traces WHERE {base}{up_to} "
        "ORDER BY completed_at DESC LIMIT 1 OFFSET ?",
        [*params, *up_to_params, rows + listed - 1],
    ).fetchone()
    keyset = " AND (completed_at < ? OR (completed_at = ? AND run_id < ?))" if position else ""
    keyset_params = [position.completed_at, position.completed_at, position.run_id] if position else []
    bound, bound_params = (" AND completed_at >= ?", [oldest[0]]) if oldest else ("", [])
    found = cursor.execute(
        f"SELECT {_ROW_COLUMNS} FROM run_traces WHERE {base}{up_to}{keyset}{bound} "
        "ORDER BY completed_at DESC, run_id DESC LIMIT ?",
        [*params, *up_to_params, *keyset_params, *bound_params, rows],
    ).fetchall()
    if not found:
        return [], set()
    # A run is placed by its last completion: a row is its run's place unless another trace of the run
    # completed later, which is then at least as recent as the round (the same pruning applies).
    ids = list(dict.fromkeys(r[0] for r in found))
    last = dict(
        cursor.execute(
            "SELECT run_id, max(completed_at) FROM run_traces "
            f"WHERE completed_at >= ? AND {in_list('run_id', ids)} GROUP BY run_id",
            [found[-1][_COMPLETED], *ids],
        ).fetchall()
    )
    return found, {r[0] for r in found if last.get(r[0]) == r[_COMPLETED]}


def _whole(cursor: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, tuple[Any, ...]]:
    """These runs with every trace folded in (a run of several traces: its first start, its sums)."""
    return {
        r[0]: r
        for r in cursor.execute(
            f"SELECT {_RUN_COLUMNS} FROM run_traces WHERE {in_list('run_id', ids)} GROUP BY run_id", ids
        ).fetchall()
    }


def _in_window(chosen: RunFilter, run: tuple[Any, ...]) -> bool:
    return (chosen.since is None or run[_START] >= chosen.since) and (
        chosen.until is None or run[_START] < chosen.until
    )


def runs_page(
    cursor: duckdb.DuckDBPyConnection, chosen: RunFilter, after: Cursor | None, limit: int
) -> dict[str, Any]:
    """One page of runs, newest completion first (a run's last completed trace places it), each with
    its latest label per spec; `next` is the cursor of the following page (None on the last).

    Rows of `run_traces` are taken newest first, a round at a time (a top-N pass, never a grouping of
    every run); a run is placed by its last completed trace, checked there against the filters SQL cannot
    check row by row (`--where`, labels), and read whole once on its page. The window compares the run's
    first start; a run of several traces whose last one started after `until` is judged by that trace."""
    if not has_table(cursor, "run_traces"):
        return {"runs": [], "next": None}
    size = min(limit, MAX_PAGE)
    clauses, params = [], list[Any]()
    for clause, value in (("task_id = ?", chosen.task), ("service_name = ?", chosen.service)):
        if value:
            clauses.append(clause)
            params.append(value)
    if chosen.since is not None:  # a run that started after `since` has every trace start after it
        clauses.append("start_time >= ?")
        params.append(chosen.since)
    scored = has_table(cursor, "verdicts")  # once a page, not once a round
    kept: list[tuple[Any, ...]] = []
    labels: dict[str, list[dict[str, Any]]] = {}
    position, scanned_to = after, None
    for round_number in range(_MAX_ROUNDS):
        wanted = min(_ROUND_ROWS, (size + 1) * 2**round_number)
        rows, places = _round(cursor, clauses, params, position, wanted)
        placed = [r for r in rows if r[0] in places and _in_window(chosen, r)]
        earliest = min((r[_COMPLETED] for r in placed), default=None)
        for verdict in latest_verdicts(
            cursor, [r[0] for r in placed], whole=False, completed_since=earliest, stored=scored
        ):
            labels.setdefault(verdict.pop("run_id"), []).append(verdict)
        seen = {r[0] for r in kept}
        for run in placed:
            if run[0] not in seen and _matches(chosen, run, labels.get(run[0], [])):
                kept.append(run)
                seen.add(run[0])
                if len(kept) > size:
                    break
        if len(kept) > size or len(rows) < wanted:
            break
        position = Cursor(rows[-1][_COMPLETED], rows[-1][0])
    else:
        scanned_to = position  # a rare filter: the page ends where the scan stopped; `next` goes on
    more = len(kept) > size
    kept = kept[:size]
    if more:
        scanned_to = Cursor(kept[-1][_COMPLETED], kept[-1][0])
    # The page's runs whole; one whose earlier trace started outside the window leaves it.
    whole = _whole(cursor, [r[0] for r in kept])
    kept = [whole[r[0]] for r in kept if r[0] in whole and _in_window(chosen, whole[r[0]])]
    runs = []
    for run_id, trace_id, task, service, agent, start, end, n_exec, n_req, status, completed, _, _ in kept:
        runs.append(
            {
                "run_id": run_id,
                "trace_id": trace_id,
                "task_id": task,
                "service_name": service,
                "agent_name": agent,
                "start_time": iso(start),
                "end_time": iso(end),
                "duration_ms": (end - start).total_seconds() * 1000 if start and end else None,
                "n_executions": n_exec,
                "n_requests": n_req,
                "status": status,
                "completed_at": iso(completed),
                "verdicts": labels.get(run_id, []),
            }
        )
    return {"runs": runs, "next": scanned_to.text() if scanned_to else None}

"""Evidence for scoring, read from the stored tables (never from OTLP).

Scoring one run reads only that run's rows: the run is found through `run_keys` (no table that grows
with the history has an index: scoring/evidence/run_keys.py), and its executions through (trace_id,
ingest_seq range), which DuckDB prunes by row-group min/max.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import duckdb

from scoring.evidence.definitions import DefinitionLoader, DefinitionSource, no_definitions
from scoring.evidence.reading import Unread, unread_runs
from scoring.evidence.run_keys import seq_range, within
from scoring.evidence.state import StateLoader, StateSource, no_state

# executions.kind: a call of one of the agent's tools, or a handoff of the conversation to another agent
# that the framework ran as a tool call (docs/storage.md).
TOOL = "tool"
HANDOFF = "handoff"


# Treated as immutable but not declared frozen: a frozen dataclass sets each field through
# object.__setattr__, which made building these ~7x slower on the online-scoring path (bench/README.md).
@dataclass(slots=True)
class Execution:
    span_id: str
    tool_name: str
    arguments: Any
    arguments_valid: bool
    error: bool
    paused: bool
    from_history: bool
    duration_ms: float
    agent_path: str | None
    call_id: str | None
    # Unix nanoseconds; 0 when unknown. Ordering, `before` and overlapping intervals need them.
    start_ns: int = 0
    end_ns: int = 0
    call_id_source: str | None = None  # "span" (the tool span set it) or "request" (recovered)
    # "tool", or "handoff": the framework handed the conversation to another agent through a tool call
    # (executions.kind); a spec sees handoffs only where it names them (scoring/judge/_scope.py).
    kind: str = TOOL
    # Which of its span's calls this is (`executions.call_index`): 0 but where one span records several.
    call_index: int = 0
    # The tool's result as stored (`executions.result`, JSON text), parsed only when a check reads it.
    # Compared by value (`result`), not text: the live path holds the text as the span carried it.
    result_text: str | None = field(default=None, compare=False)

    @property
    def result(self) -> tuple[bool, Any]:
        """(captured, value) of the result: JSON text is its value, any other text the string itself
        (as the store keeps it: a non-JSON result is stored as a JSON string)."""
        return result_value(self.result_text)

    @property
    def key(self) -> tuple[str, int]:
        """The execution's identity in its trace: (span id, call index); a request's `execution_key`."""
        return self.span_id, self.call_index

    @property
    def clean(self) -> bool:
        """The evidence rule: it ran, under a name, without error, not paused, not replayed history."""
        return bool(self.tool_name) and not self.error and not self.paused and not self.from_history


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and the infinities are not JSON: DuckDB stores such text as a string


def result_value(text: str | None) -> tuple[bool, Any]:
    """(captured, value) of a result's text, read as `executions.result` stores it."""
    if text is None:
        return False, None
    try:
        return True, json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return True, text


@dataclass(slots=True)
class Request:
    tool_name: str
    call_id: str | None
    executed: bool
    agent_path: str | None
    span_id: str = ""  # the chat span that asked
    position: int = 0
    round: int | None = None  # one chat span's calls are one round (tool_requests.round)
    execution_span_id: str | None = None  # the execution that carried it out (matched by the collector)
    encoding: str | None = None  # gen_ai | openinference | openllmetry | text_json
    execution_call_index: int | None = None  # which of that span's calls (tool_requests.execution_call_index)

    @property
    def execution_key(self) -> tuple[str, int] | None:
        """The `Execution.key` of the execution that carried it out, or None."""
        if self.execution_span_id is None:
            return None
        return self.execution_span_id, self.execution_call_index or 0


@dataclass(slots=True)
class Run:
    run_id: str
    trace_id: str
    task_id: str | None
    service_name: str | None
    agent_name: str | None
    session_id: str | None
    version: int
    attributes: dict[str, Any]
    root_span_id: str | None = None


@dataclass(slots=True)
class Evidence:
    run: Run
    executions: tuple[Execution, ...]
    requests: tuple[Request, ...]
    # Tool definitions captured in the run's traces; loaded only when a check calls it.
    definitions: DefinitionSource = field(default=no_definitions)
    # The environment's state snapshot at the end of the run (`tracescore.state`); loaded on demand.
    state: StateSource = field(default=no_state)
    # Executions of the conversation's earlier turns: where a turn's `flows` may take their values from.
    earlier: tuple[Execution, ...] = ()
    # Set when none of the run's spans is in a convention tracescore reads (scoring/evidence/reading.py):
    # it is judged `error`, never `fail`.
    unread: Unread | None = None


# The order runs are scored in (and verdicts listed in): by their first span, then id.
RUN_ORDER = "min(start_time), run_id"

_RUN_COLUMNS = (
    "run_id, min(trace_id), any_value(task_id), any_value(service_name), any_value(agent_name), "
    "any_value(session_id), sum(version)::BIGINT, any_value(attributes), "
    "list(trace_id), min(min_seq), max(max_seq), any_value(root_span_id)"
)


def _run(row: tuple[Any, ...]) -> tuple[Run, list[str], int, int]:
    run = Run(
        run_id=row[0],
        trace_id=row[1],
        task_id=row[2],
        service_name=row[3],
        agent_name=row[4],
        session_id=row[5],
        version=int(row[6]),
        attributes=json.loads(row[7]) if row[7] else {},
        root_span_id=row[11],
    )
    return run, list(row[8]), int(row[9]), int(row[10])


def complete_runs_source(
    connection: duckdb.DuckDBPyConnection,
    *,
    run_id: str | None = None,
    task_id: str | None = None,
    run_ids: list[str] | None = None,
) -> tuple[str, list[Any]]:
    """`FROM … GROUP BY run_id HAVING …` over run_traces for the complete runs wanted, and its parameters
    (shared with set-based scoring, scoring/batch/score.py, so both judge the same runs). Runs wanted by
    id are found through `run_keys` (scoring/evidence/run_keys.py)."""
    source, params = "run_traces", list[Any]()
    wanted = run_ids if run_ids is not None else None if run_id is None else [run_id]
    if wanted is not None:
        condition, bounds = within(seq_range(connection, wanted, "run_key"), "run_traces.max_seq")
        source = (
            "(SELECT unnest(?::VARCHAR[]) AS wanted) w "
            f"JOIN run_traces ON run_traces.run_id = w.wanted AND {condition}"
        )
        params.extend([wanted, *bounds])
    having = "bool_and(status = 'complete')"
    if task_id is not None:
        having += " AND any_value(task_id) = ?"
        params.append(task_id)
    return f"FROM {source} GROUP BY run_id HAVING {having}", params


def complete_runs(
    connection: duckdb.DuckDBPyConnection,
    *,
    run_id: str | None = None,
    task_id: str | None = None,
    run_ids: list[str] | None = None,
) -> list[tuple[Run, list[str], int, int]]:
    """Complete runs (open ones are unscored, not failed), with their traces and ingest range."""
    source, params = complete_runs_source(connection, run_id=run_id, task_id=task_id, run_ids=run_ids)
    rows = connection.execute(
        f"SELECT {_RUN_COLUMNS} {source} ORDER BY {RUN_ORDER}",
        params,
    ).fetchall()
    return [_run(row) for row in rows]


def complete_run_ids(
    connection: duckdb.DuckDBPyConnection, *, run_id: str | None = None, task_id: str | None = None
) -> list[str]:
    """The ids of `complete_runs`, in its order, without reading the runs themselves."""
    source, params = complete_runs_source(connection, run_id=run_id, task_id=task_id)
    rows = connection.execute(f"SELECT run_id {source} ORDER BY {RUN_ORDER}", params).fetchall()
    return [row[0] for row in rows]


def _arguments(text: str | None, raw: str | None) -> tuple[Any, bool]:
    if text is not None:
        return json.loads(text), True
    return None, raw is None  # arguments that were sent but are not JSON can never match a spec


def load_evidence(
    connection: duckdb.DuckDBPyConnection, runs: list[tuple[Run, list[str], int, int]]
) -> list[Evidence]:
    """Executions and requests for these runs, in one pass per table."""
    if not runs:
        return []
    trace_ids = sorted({t for _, traces, _, _ in runs for t in traces})
    low = min(lo for _, _, lo, _ in runs)
    high = max(hi for _, _, _, hi in runs)
    wanted = {run.run_id for run, _, _, _ in runs}
    executions: dict[str, list[Execution]] = {run_id: [] for run_id in wanted}
    requests: dict[str, list[Request]] = {run_id: [] for run_id in wanted}
    rows = connection.execute(
        "SELECT run_id, span_id, tool_name, arguments, arguments_raw, error, paused, from_history, "
        "duration_ms, agent_path, call_id, epoch_ns(start_time), epoch_ns(end_time), call_id_source, kind, "
        "result::VARCHAR, call_index FROM executions "
        "WHERE ingest_seq BETWEEN ? AND ? AND trace_id IN (SELECT unnest(?::VARCHAR[])) "
        "ORDER BY start_time, span_id, call_index",
        [low, high, trace_ids],
    ).fetchall()
    for row in rows:
        if row[0] in executions:
            arguments, valid = _arguments(row[3], row[4])
            executions[row[0]].append(
                Execution(
                    row[1],
                    row[2],
                    arguments,
                    valid,
                    row[5],
                    row[6],
                    row[7],
                    row[8] or 0.0,
                    row[9],
                    row[10],
                    start_ns=row[11] or 0,
                    end_ns=row[12] or 0,
                    call_id_source=row[13],
                    kind=row[14],
                    result_text=row[15],
                    call_index=row[16],
                )
            )
    rows = connection.execute(
        "SELECT run_id, tool_name, call_id, execution_span_id IS NOT NULL, agent_path, span_id, position, "
        "round, execution_span_id, encoding, execution_call_index FROM tool_requests "
        "WHERE ingest_seq BETWEEN ? AND ? AND trace_id IN (SELECT unnest(?::VARCHAR[])) "
        "ORDER BY requested_at, position",
        [low, high, trace_ids],
    ).fetchall()
    for row in rows:
        if row[0] in requests:
            requests[row[0]].append(Request(row[1], row[2], row[3], row[4], *row[5:11]))
    ranges = {run.run_id: (traces, lo, hi) for run, traces, lo, hi in runs}
    definitions = DefinitionLoader(connection, ranges)
    states = StateLoader(connection, ranges)
    unread = unread_runs(
        connection,
        {r: ranges[r] for r in wanted if not executions[r]},
        {r for r in wanted if not executions[r] and requests[r]},
    )
    return [
        Evidence(
            run,
            tuple(executions[run.run_id]),
            tuple(requests[run.run_id]),
            definitions.source(run.run_id),
            states.source(run.run_id),
            unread=unread.get(run.run_id),
        )
        for run, _, _, _ in runs
    ]

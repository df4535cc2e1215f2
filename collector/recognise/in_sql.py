"""Recognition as set-based SQL over raw span rows (issue #17, decision 3): a whole batch at once.

`recognise_in_sql(connection, relation)` reads a relation shaped like the `spans` table (the writer's
Arrow batch, or the table itself) and returns, in one query:
- the tool executions and requested calls of the spans the SQL adapters own, as rows of
  `EXECUTION_FIELDS` and `REQUEST_FIELDS` (the stored form: arguments as JSON text, results as text);
- the spans left to the Python adapters, and for which part (executions, requests, outcomes).

The adapters written in SQL, each beside its Python twin's rules (`_sql_executions`, `_sql_requests`):
executions of OpenTelemetry GenAI `execute_tool`, pydantic-ai's `running tool`, OpenLLMetry's
`traceloop.span.kind = tool`, OpenInference TOOL spans and the Vercel AI SDK's `ai.toolCall`, outside
the scopes whose content Python unwraps; requests from GenAI `gen_ai.output.messages`. The rest stays
with `conventions`, `requests` and `outcomes`. `execution_fields` and `request_fields` give the Python
readings in the same shape, which is how the parity suite compares the two.

A known difference it does not detect: JSON text with a key twice (`{"a": 1, "a": 2}`) in the output
messages or in Traceloop's recorded input; DuckDB reads the first, Python the last. The attributes
themselves never have one (they are stored from a dict). No recording has such text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from collector.model.domain import ToolExecution, ToolRequest
from collector.model.jsontext import to_json
from collector.recognise import _sql_executions, _sql_requests
from collector.recognise._sql_facts import facts
from collector.recognise.outcomes import AUTOGEN_OPENINFERENCE_SCOPE

EXECUTION_FIELDS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "tool_name",
    "call_id",
    "arguments",
    "arguments_raw",
    "arguments_error",
    "result",
    "error",
    "error_type",
    "error_message",
    "paused",
    "pause_reason",
    "from_history",
    "start_ns",
    "end_ns",
    "convention",
    "service_name",
    "scope_name",
    "kind",
)
REQUEST_FIELDS = (
    "trace_id",
    "span_id",
    "position",
    "tool_name",
    "call_id",
    "arguments",
    "arguments_raw",
    "arguments_error",
    "requested_ns",
    "encoding",
)

# Which parts of a span the Python readers take.
EXECUTIONS, REQUESTS, OUTCOMES = "executions", "requests", "outcomes"


_OWNED_BY_SQL = tuple(_sql_executions.ADAPTERS)


def recognition_query(relation: str) -> str:
    """One streaming pass: a row per span that holds an execution or requests (read here, or left to
    Python), with the execution's fields and the requested calls as a list."""
    computed = {
        "arguments_error": "NULL::VARCHAR",  # the SQL keeps only arguments it can read
        "error_type": "CASE WHEN error THEN any_error_type END",
        "error_message": "CASE WHEN error THEN any_error_message END",
        "kind": "'tool'",
    }
    execution = ", ".join(f"{computed.get(c, c)} AS {c}" for c in EXECUTION_FIELDS)
    owned = f"(SELECT *, {_sql_executions.OWNER} AS owner FROM facts)"
    read = _sql_executions.outcome(f"({_sql_executions.content(owned)})")
    return f"""
    WITH facts AS MATERIALIZED ({facts(relation)}),
    read AS MATERIALIZED (SELECT *, {_sql_requests.MESSAGES} AS messages FROM ({read}))
    SELECT
        CASE WHEN owner = 'python' OR (owner IS NOT NULL AND NOT arguments_sure) THEN 'python'
             WHEN owner IS NOT NULL AND tool_name <> '(merged tools)' THEN 'sql' END AS execution_by,
        CASE WHEN request_owner = 'gen_ai' THEN 'sql' ELSE request_owner END AS requests_by,
        coalesce(scope_name = '{AUTOGEN_OPENINFERENCE_SCOPE}', false) AS outcomes_by_python,
        {execution},
        CASE WHEN request_owner = 'gen_ai' THEN {_sql_requests.REQUESTS} END AS calls
    FROM (
        SELECT *, {_sql_requests.OWNER} AS request_owner
        FROM (SELECT *, {_sql_requests.CALLS} AS calls FROM read)
    )
    WHERE owner IS NOT NULL OR request_owner IS NOT NULL OR scope_name = '{AUTOGEN_OPENINFERENCE_SCOPE}'
    """


@dataclass(slots=True)
class SqlRecognition:
    """What the SQL read off a batch, and which spans it left to the Python readers."""

    executions: list[tuple[object, ...]] = field(default_factory=list)
    requests: list[tuple[object, ...]] = field(default_factory=list)
    # (trace id, span id) -> the parts Python reads: EXECUTIONS, REQUESTS, OUTCOMES.
    to_python: dict[tuple[str, str], set[str]] = field(default_factory=dict)


def recognise_in_sql(connection: duckdb.DuckDBPyConnection, relation: str) -> SqlRecognition:
    """Recognise every span of `relation` (a table, view or registered Arrow table with the `spans`
    table's columns) in one query on this connection."""
    rows = connection.execute(recognition_query(relation)).fetchall()
    recognition = SqlRecognition()
    n = len(EXECUTION_FIELDS)
    for execution_by, requests_by, outcomes_by_python, *execution, calls in rows:
        key = (execution[0], execution[1])
        if execution_by == "sql":
            recognition.executions.append(tuple(execution))
        for call in calls or ():
            recognition.requests.append(
                (
                    *key,
                    call["position"],
                    call["tool_name"],
                    call["call_id"],
                    call["arguments"],
                    call["arguments_raw"],
                    None,
                    execution[n - 5],  # the span's end: when the model asked
                    "gen_ai",
                )
            )
        parts = {
            part
            for part, by_python in (
                (EXECUTIONS, execution_by == "python"),
                (REQUESTS, requests_by == "python"),
                (OUTCOMES, outcomes_by_python),
            )
            if by_python
        }
        if parts:
            recognition.to_python[key] = parts
    return recognition


def _result_text(value: object) -> str | None:
    return value if isinstance(value, str) else to_json(value)


def execution_fields(e: ToolExecution) -> tuple[object, ...]:
    """A Python adapter's execution in the shape of the SQL's rows (as `store.rows` writes it)."""
    return (
        e.trace_id,
        e.span_id,
        e.parent_span_id,
        e.tool_name,
        e.call_id,
        e.arguments.json_text(),
        e.arguments.raw,
        e.arguments.error,
        _result_text(e.result),
        e.error,
        e.error_type if e.error else None,
        e.error_message,
        e.paused,
        e.pause_reason,
        e.from_history,
        e.start_ns,
        e.end_ns,
        e.convention,
        e.service_name,
        e.scope_name or None,
        e.kind,
    )


def request_fields(r: ToolRequest) -> tuple[object, ...]:
    """A Python reader's request in the shape of the SQL's rows."""
    return (
        r.trace_id,
        r.span_id,
        r.position,
        r.tool_name,
        r.call_id,
        r.arguments.json_text(),
        r.arguments.raw,
        r.arguments.error,
        r.requested_ns,
        r.encoding,
    )

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


def _query(relation: str) -> str:
    computed = {
        "arguments_error": "NULL::VARCHAR",  # the SQL keeps only arguments it can read
        "error_type": "CASE WHEN error THEN any_error_type END",
        "error_message": "CASE WHEN error THEN any_error_message END",
        "kind": "'tool'",
    }
    executions = ", ".join(f"{computed.get(c, c)} AS {c}" for c in EXECUTION_FIELDS)
    return f"""
    WITH facts AS MATERIALIZED ({facts(relation)}),
    owned AS (SELECT *, {_sql_executions.OWNER} AS owner FROM facts),
    content AS ({_sql_executions.content()}),
    outcome AS ({_sql_executions.OUTCOME}),
    requested AS (
        SELECT *, {_sql_requests.OWNER} AS request_owner FROM (
            SELECT *, {_sql_requests.CALLS} AS calls FROM (
                SELECT *, {_sql_requests.MESSAGES} AS messages FROM facts
            )
        )
    )
    SELECT 'execution' AS what, {executions}, NULL::INTEGER AS position, NULL::BIGINT AS requested_ns
    FROM outcome WHERE arguments_sure
    UNION ALL BY NAME
    SELECT 'request' AS what, *, 'gen_ai' AS convention FROM ({_sql_requests.ROWS})
    UNION ALL BY NAME
    SELECT '{EXECUTIONS}' AS what, trace_id, span_id FROM owned WHERE owner = 'python'
    UNION ALL BY NAME
    SELECT '{EXECUTIONS}' AS what, trace_id, span_id FROM content WHERE NOT arguments_sure
    UNION ALL BY NAME
    SELECT '{REQUESTS}' AS what, trace_id, span_id FROM requested WHERE request_owner = 'python'
    UNION ALL BY NAME
    SELECT '{OUTCOMES}' AS what, trace_id, span_id FROM facts
    WHERE scope_name = '{AUTOGEN_OPENINFERENCE_SCOPE}'
    """


@dataclass(slots=True)
class SqlRecognition:
    """What the SQL read off a batch, and which spans it left to the Python readers."""

    executions: list[tuple[object, ...]] = field(default_factory=list)
    requests: list[tuple[object, ...]] = field(default_factory=list)
    # (trace id, span id) -> the parts Python reads: EXECUTIONS, REQUESTS, OUTCOMES.
    to_python: dict[tuple[str, str], set[str]] = field(default_factory=dict)


_EXECUTION_SELECT = ", ".join(EXECUTION_FIELDS)
_REQUEST_SELECT = ", ".join(c if c != "encoding" else "convention" for c in REQUEST_FIELDS)


def recognise_in_sql(connection: duckdb.DuckDBPyConnection, relation: str) -> SqlRecognition:
    """Recognise every span of `relation` (a table, view or registered Arrow table with the `spans`
    table's columns) in one query on this connection."""
    rows = connection.execute(
        f"SELECT what, {_EXECUTION_SELECT}, position, requested_ns FROM ({_query(relation)})"
    ).fetchall()
    recognition = SqlRecognition()
    n = len(EXECUTION_FIELDS)
    for row in rows:
        what = row[0]
        if what == "execution":
            recognition.executions.append(row[1 : n + 1])
        elif what == "request":
            values = dict(zip(EXECUTION_FIELDS, row[1 : n + 1], strict=True))
            values["position"], values["requested_ns"] = row[n + 1], row[n + 2]
            values["encoding"] = values["convention"]
            recognition.requests.append(tuple(values[c] for c in REQUEST_FIELDS))
        else:
            recognition.to_python.setdefault((row[1], row[2]), set()).add(what)
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

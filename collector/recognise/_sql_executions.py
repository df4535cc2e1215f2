"""Tool executions recognised in SQL: which adapter owns each span, one query per adapter, and the
outcome (errors, pauses) every adapter shares, each a transcription of its twin in `conventions.py`.

A span goes to the Python adapters ("python") wherever the SQL could read it differently: conventions
not written here (MCP, Strands, Google ADK, Haystack, the scopes whose content is unwrapped in
`_shapes.py`), attribute values whose Python `str()` differs from their JSON text, and argument text
whose validity the two JSON parsers might judge differently. The parity suite
(tests/collector/recognise/test_sql_parity.py) holds every span the SQL keeps to the Python reading.
"""

from __future__ import annotations

from collector.recognise._sql_facts import ODD, attr, equals, is_string, is_true, present, stored_value, text

_ADK_SCOPE = "gcp.vertex.agent"
_STRANDS_SCOPE = "strands.telemetry.tracer"
# OpenInference scopes whose content `_shapes.py` unwraps (bound calls, ToolOutput, FunctionResponse,
# ToolMessage): left to Python.
_OPENINFERENCE_UNWRAPPED = (
    "openinference.instrumentation.smolagents",
    "openinference.instrumentation.llama_index",
    "openinference.instrumentation.dspy",
    "openinference.instrumentation.google_adk",
    "openinference.instrumentation.langchain",
)
_OPENAI_AGENTS_SCOPE = "openinference.instrumentation.openai_agents"
_OPENAI_AGENTS_JS_SCOPE = "@arizeai/openinference-instrumentation-openai-agents"
# OpenLLMetry scopes whose content `_shapes.py` unwraps.
_TRACELOOP_UNWRAPPED = (
    "opentelemetry.instrumentation.langchain",
    "opentelemetry.instrumentation.mcp.instrumentation",
)
# OpenLIT's LangChain tool spans: a raising tool's run id and the ToolMessage's `str()` (`_openlit.py`).
_OPENLIT_LANGCHAIN_SCOPE = "openlit.instrumentation.langchain"
# Pydantic Logfire's tool span of the OpenAI Agents SDK (`_logfire.py`).
_LOGFIRE_FUNCTION = "Function: {name}"
_STRANDS_EVENTS = ("gen_ai.client.inference.operation.details", "gen_ai.tool.message", "gen_ai.choice")
# A status that may end in a JavaScript stack, which Python takes off
# (`_langchain_messages.without_js_stack`).
_JS_STACK = (
    "(contains(status_message, chr(10) || '    at ')"
    " OR contains(coalesce(exception::VARCHAR, ''), '\\n    at '))"
)
# A result that may be LangChain's serialised ToolMessage, in any scope (`_langchain_messages.py`, read
# by its shape): every form of it has a `tool_call_id` key, so a result whose text holds none is not one.
_MAY_BE_TOOL_MESSAGE = "contains(coalesce({0}::VARCHAR, ''), 'tool_call_id')"


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


# The Langfuse SDK's and MLflow's own spans (`_langfuse`, `_mlflow`): read in Python.
_OBSERVABILITY_SDKS = f"({present('langfuse.observation.type')} OR {present('mlflow.spanType')})"

_GENAI_ENTRY = f"({equals('gen_ai.operation.name', 'execute_tool')} OR name = 'running tool')"

# A span any adapter of `conventions.ADAPTERS` may claim (each adapter's first test).
_ANY_ENTRY = " OR ".join(
    [
        equals("mcp.method.name", "tools/call"),
        equals("traceloop.span.kind", "tool"),
        _GENAI_ENTRY,
        equals("openinference.span.kind", "TOOL"),
        f"({equals('openinference.span.kind', 'AGENT')} AND {present('tool.name')})",
        equals("ai.operationId", "ai.toolCall"),
        "name = 'haystack.agent.step.tool'",
        _OBSERVABILITY_SDKS,
    ]
)

# Which adapter reads each span, in `conventions.ADAPTERS`' order; NULL when none claims it.
OWNER = f"""
CASE
    WHEN nulls THEN 'python'
    WHEN {equals("logfire.msg_template", _LOGFIRE_FUNCTION)} THEN 'python'
    WHEN NOT ({_ANY_ENTRY}) THEN NULL
    WHEN {ODD} THEN 'python'
    WHEN {_JS_STACK} THEN 'python'
    WHEN {equals("mcp.method.name", "tools/call")} THEN 'python'
    WHEN {equals("traceloop.span.kind", "tool")} THEN
        CASE WHEN scope_name IN ({_quoted(_TRACELOOP_UNWRAPPED)}) THEN 'python'
             WHEN {_MAY_BE_TOOL_MESSAGE.format(attr("traceloop.entity.output"))}
                  OR {_MAY_BE_TOOL_MESSAGE.format(attr("gen_ai.tool.call.result"))} THEN 'python'
             ELSE 'traceloop' END
    WHEN {_GENAI_ENTRY} THEN
        CASE WHEN scope_name IN ('{_ADK_SCOPE}', '{_STRANDS_SCOPE}') THEN 'python'
             WHEN scope_name = '{_OPENLIT_LANGCHAIN_SCOPE}' THEN 'python'
             WHEN {is_string(attr("gen_ai.tool.call.result"))}
                  AND starts_with({attr("gen_ai.tool.call.result")} ->> '$', 'content=') THEN 'python'
             WHEN {present("gen_ai.tool.call.arguments")} THEN 'gen_ai'
             WHEN {present("gcp.vertex.agent.tool_call_args")} THEN 'python'
             WHEN {present("openinference.span.kind")} THEN 'python'
             WHEN {present("tool_arguments")} OR name = 'running tool' THEN 'pydantic_ai_v2'
             WHEN list_has_any(event_names, [{_quoted(_STRANDS_EVENTS)}]) THEN 'python'
             ELSE 'gen_ai' END
    WHEN {equals("openinference.span.kind", "TOOL")} THEN
        CASE WHEN scope_name IN ({_quoted(_OPENINFERENCE_UNWRAPPED)}) THEN 'python'
             WHEN {_MAY_BE_TOOL_MESSAGE.format(attr("output.value"))} THEN 'python'
             WHEN scope_name = '{_OPENAI_AGENTS_SCOPE}' AND NOT {present("tool.name")}
                  AND starts_with(name, 'handoff to ') THEN 'python'
             WHEN scope_name = '{_OPENAI_AGENTS_JS_SCOPE}' AND starts_with(name, 'handoff to ') THEN 'python'
             ELSE 'openinference' END
    WHEN {equals("openinference.span.kind", "AGENT")} AND {present("tool.name")} THEN 'python'
    WHEN {equals("ai.operationId", "ai.toolCall")} AND {present("ai.toolCall.name")} THEN 'vercel_ai'
    WHEN name = 'haystack.agent.step.tool' AND {present("haystack.tool.name")} THEN 'python'
    WHEN {_OBSERVABILITY_SDKS} THEN 'python'
END"""

# The GenAI name: `gen_ai.tool.name`, else the span name after `execute_tool `.
_GENAI_NAME = (
    f"coalesce({text('gen_ai.tool.name')}, "
    "CASE WHEN starts_with(name, 'execute_tool ') THEN name[14:] END, '')"
)
_GENAI_CALL_ID = f"nullif({text('gen_ai.tool.call.id')}, '<not specified>')"

# Each adapter's reading of the spans it owns: (tool name, arguments and result as JSON, call id, and
# whether Traceloop's `{"args", "kwargs"}` wrapper is taken off the arguments).
ADAPTERS: dict[str, dict[str, str]] = {
    "gen_ai": {
        "tool_name": _GENAI_NAME,
        "args": attr("gen_ai.tool.call.arguments"),
        "result_json": attr("gen_ai.tool.call.result"),
        "call_id": _GENAI_CALL_ID,
    },
    "pydantic_ai_v2": {
        "tool_name": _GENAI_NAME,
        "args": attr("tool_arguments"),
        "result_json": attr("tool_response"),
        "call_id": _GENAI_CALL_ID,
    },
    "traceloop": {
        "tool_name": f"""coalesce({text("traceloop.entity.name")}, {text("gen_ai.tool.name")},
            CASE WHEN suffix(name, '.tool') THEN left(name, length(name) - 5) ELSE name END)""",
        "args": f"""coalesce({attr("traceloop.entity.input")}, {attr("gen_ai.tool.call.arguments")})""",
        "result_json": f"""coalesce({attr("traceloop.entity.output")}, {attr("gen_ai.tool.call.result")})""",
        "call_id": text("gen_ai.tool.call.id"),
        "unwrap": "true",
    },
    "openinference": {
        "tool_name": f"""coalesce({text("tool.name")}, name)""",
        # OpenInference's TraceConfig(hide_inputs=True) writes this instead of the input.
        "args": f"""CASE WHEN NOT {equals("input.value", "__REDACTED__")} THEN {attr("input.value")} END""",
        "result_json": attr("output.value"),
        "call_id": f"""coalesce({text("tool.id")}, {text("tool_call.id")})""",
    },
    "vercel_ai": {
        "tool_name": f"""{attr("ai.toolCall.name")} ->> '$'""",
        "args": attr("ai.toolCall.args"),
        "result_json": attr("ai.toolCall.result"),
        "call_id": text("ai.toolCall.id"),
    },
}


def _by_owner(column: str, default: str = "NULL") -> str:
    branches = " ".join(
        f"WHEN '{name}' THEN {reading[column]}" for name, reading in ADAPTERS.items() if column in reading
    )
    return f"CASE owner {branches} ELSE {default} END"


# JSON text both parsers judge alike when DuckDB finds it valid: none of what DuckDB accepts and
# Python refuses (NaN, Infinity, trailing commas), and too short to nest as deep as Python's recursion
# limit (~990 levels need ~1,980 characters).
PYTHON_SAFE_TEXT = r"""(NOT regexp_matches({0}, 'NaN|Infinity|,\s*[\]}}]')
    AND (length({0}) < 1900 OR length({0}) - length(replace(replace({0}, '[', ''), '{{', '')) < 900))"""
STRICT_JSON_TEXT = "(json_valid({0}) AND " + PYTHON_SAFE_TEXT + ")"

# Traceloop's decorators record `{"args": [...], "kwargs": {...}}`: the call's arguments are the
# kwargs, positional values kept under `args` (`_content.unwrap_traceloop`).
_WRAPPED = """(json_type(parsed) = 'OBJECT' AND json_type(parsed, '$.kwargs') = 'OBJECT'
    AND list_sort(json_keys(parsed)) IN (['kwargs'], ['args', 'kwargs'])
    AND coalesce(json_type(parsed, '$.args'), 'ARRAY') = 'ARRAY')"""
_UNWRAPPED = """CASE WHEN coalesce(json_array_length(parsed, '$.args'), 0) > 0
    THEN json_merge_patch(parsed -> 'kwargs', json_object('args', parsed -> 'args'))
    ELSE parsed -> 'kwargs' END"""

_PAUSE_REASONS = ("confirmation", "user_input", "external_execution")


def content(source: str) -> str:
    """Each span of `source` (with `owner`) read by its adapter, arguments as `_content.parse_arguments`
    reads them; `arguments_sure` is false where only Python's JSON parser can judge the text. Each step
    is a CASE so that what a span does not need (the strict test of structured arguments, Traceloop's
    unwrapping elsewhere) is never computed for it."""
    read = ",\n".join(f"{_by_owner(c)} AS {c}" for c in ("tool_name", "args", "result_json", "call_id"))
    return f"""
    SELECT *,
        CASE WHEN unwrap AND parsed IS NOT NULL AND {_WRAPPED} THEN ({_UNWRAPPED})::VARCHAR
             ELSE coalesce(arguments_raw, args::VARCHAR) END AS arguments,
        {stored_value("result_json")} AS result
    FROM (
        SELECT *,
            CASE WHEN unwrap THEN
                CASE WHEN arguments_raw IS NULL THEN args WHEN arguments_sure THEN json(arguments_raw) END
            END AS parsed
        FROM (
            SELECT *,
                CASE WHEN arguments_raw IS NULL THEN true
                     ELSE {STRICT_JSON_TEXT.format("arguments_raw")} END AS arguments_sure
            FROM (
                SELECT *, CASE WHEN {is_string("args")} THEN args ->> '$' END AS arguments_raw
                FROM (
                    SELECT *, {read}, {_by_owner("unwrap", "false")} AS unwrap, owner AS convention
                    FROM {source}
                )
            )
        )
    )"""


def outcome(source: str) -> str:
    """What every adapter shares (`recognise_execution` after the adapter): errors, pauses, history."""
    return f"""
SELECT *,
    CASE WHEN paused AND deferral IS NOT NULL THEN false ELSE raw_error END AS error
FROM (
    SELECT *,
        CASE WHEN {is_true("tracescore.tool.paused")} OR deferral IS NOT NULL
                  OR tool_name IN ('adk_request_confirmation', 'adk_request_input', 'adk_request_credential')
                  OR (suffix(exception_type, 'GraphInterrupt') AND status_code <> 2)
             THEN true ELSE false END AS paused,
        CASE WHEN {is_true("tracescore.tool.paused")} THEN
                 CASE WHEN {text("tracescore.tool.pause_reason")} IN ({_quoted(_PAUSE_REASONS)})
                      THEN {text("tracescore.tool.pause_reason")} END
             WHEN deferral IS NOT NULL THEN
                 CASE deferral WHEN 'ApprovalRequired' THEN 'confirmation'
                               WHEN 'CallDeferred' THEN 'external_execution' END
             WHEN tool_name = 'adk_request_confirmation' THEN 'confirmation'
             WHEN tool_name IN ('adk_request_input', 'adk_request_credential') THEN 'user_input'
             WHEN suffix(exception_type, 'GraphInterrupt') AND status_code <> 2 THEN 'user_input'
        END AS pause_reason,
        status_code = 2 OR {present("error.type")} OR failure_stage IS NOT NULL
            OR {equals("gen_ai.tool.status", "error")} OR {is_true("haystack.tool.error")} AS raw_error,
        coalesce({text("error.type")}, failure_stage || '_failed', exception_type) AS any_error_type,
        coalesce(
            CASE WHEN contains(status_message, chr(10)) AND exception_message IS NOT NULL
                 THEN exception_message ELSE coalesce(nullif(status_message, ''), exception_message) END,
            CASE WHEN failure_stage IS NOT NULL THEN {text("logfire.msg")} END
        ) AS any_error_message,
        {is_true("tracescore.tool.from_history")} AS from_history
    FROM (
        SELECT *,
            {text("pydantic_ai.tool.deferral.name")} AS deferral,
            {text("pydantic_ai.tool.failure_stage")} AS failure_stage,
            nullif(exception ->> '$."exception.type"', '') AS exception_type,
            nullif(exception ->> '$."exception.message"', '') AS exception_message
        FROM {source}
    )
)"""

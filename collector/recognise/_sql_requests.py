"""Requested tool calls recognised in SQL: OpenTelemetry GenAI's `gen_ai.output.messages` parts of type
`tool_call`, transcribed from `requests.extract_requests`; every other encoding is left to Python.

A span's requests are the SQL's ("gen_ai") when its output messages hold tool calls the SQL reads
exactly; none when no reader could find a call on it; Python's otherwise (other encodings, the
fenced-JSON and DSPy text fallbacks, values whose Python `str()` differs from their JSON text).
"""

from __future__ import annotations

from collector.recognise._sql_executions import STRICT_JSON_TEXT
from collector.recognise._sql_facts import attr, equals, present

_MESSAGES = attr("gen_ai.output.messages")
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_STRICT_MESSAGES = STRICT_JSON_TEXT.format(f"{_MESSAGES} ->> '$'")

# The messages as `_output_messages` loads them (text parsed, structure as is); NULL when the text is
# not surely JSON to both parsers (the span then goes to Python).
MESSAGES = f"""CASE WHEN json_type({_MESSAGES}) = 'VARCHAR' THEN
        CASE WHEN {_STRICT_MESSAGES} THEN ({_MESSAGES} ->> '$')::JSON END
    ELSE {_MESSAGES} END"""

# Every `tool_call` part of every message, in order (`_output_tool_calls`).
CALLS = """CASE WHEN json_type(messages) = 'ARRAY' THEN list_filter(
        flatten(list_transform(json_extract(messages, '$[*]'), lambda m:
            CASE WHEN json_type(m) = 'OBJECT' AND json_type(m, '$.parts') = 'ARRAY'
                 THEN json_extract(m, '$.parts[*]') ELSE []::JSON[] END)),
        lambda p: json_type(p) = 'OBJECT' AND json_type(p, '$.type') = 'VARCHAR'
            AND p ->> '$.type' = 'tool_call')
    ELSE []::JSON[] END"""

# A call the SQL reads as Python does: a text name (or none), a text or integer id, arguments that are
# structured or surely-JSON text.
_CALL_SURE = (
    "("
    + " AND ".join(
        [
            "coalesce(json_type(c, '$.name') IN ('VARCHAR', 'NULL'), true)",
            "coalesce(json_type(c, '$.id') IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'NULL'), true)",
            "(coalesce(json_type(c, '$.arguments') <> 'VARCHAR', true) OR "
            + STRICT_JSON_TEXT.format("(c ->> '$.arguments')")
            + ")",
        ]
    )
    + ")"
)

_FLATTENED = (
    """(contains(attributes, '"llm.output_messages.') OR contains(attributes, '"gen_ai.completion.'))"""
)
_TEXT_CALL_MARKERS = """(contains(attributes, '```') OR contains(attributes, '[[ ## next_tool_name ## ]]'))"""

# Whose the span's requests are, in `extract_requests`' order.
OWNER = f"""
CASE
    WHEN nulls THEN 'python'
    WHEN {equals("gen_ai.operation.name", "invoke_agent")} THEN NULL
    WHEN name = 'haystack.agent.step.llm' THEN 'python'
    WHEN json_type({attr("ai.operationId")}) = 'VARCHAR'
         AND (suffix({attr("ai.operationId")} ->> '$', '.doGenerate')
              OR suffix({attr("ai.operationId")} ->> '$', '.doStream')) THEN 'python'
    WHEN {present("gen_ai.output.messages")} AND messages IS NULL THEN 'python'
    WHEN len(calls) > 0 THEN
        CASE WHEN list_bool_and(list_transform(calls, lambda c: {_CALL_SURE})) THEN 'gen_ai' ELSE 'python' END
    WHEN list_contains(event_names, '{_DETAILS_EVENT}') OR {present("gcp.vertex.agent.llm_response")}
         OR starts_with(coalesce(scope_name, ''), 'openinference.instrumentation.crewai')
         OR ({equals("gen_ai.operation.name", "chat")} AND len(event_names) > 0)
         OR {_FLATTENED} OR {_TEXT_CALL_MARKERS} THEN 'python'
END"""

# One row per call of the spans whose requests the SQL reads (`requests._request`).
ROWS = """
SELECT trace_id, span_id, position,
    coalesce(c ->> '$.name', '') AS tool_name,
    nullif(c ->> '$.id', '') AS call_id,
    CASE json_type(c, '$.arguments') WHEN 'VARCHAR' THEN c ->> '$.arguments' WHEN 'NULL' THEN NULL
         ELSE (c -> '$.arguments')::VARCHAR END AS arguments,
    CASE WHEN json_type(c, '$.arguments') = 'VARCHAR' THEN c ->> '$.arguments' END AS arguments_raw,
    end_ns AS requested_ns
FROM (
    SELECT trace_id, span_id, end_ns, unnest(calls) AS c, generate_subscripts(calls, 1) - 1 AS position
    FROM requested WHERE request_owner = 'gen_ai'
)"""

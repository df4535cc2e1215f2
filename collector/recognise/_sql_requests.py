"""Requested tool calls recognised in SQL: OpenTelemetry GenAI's `gen_ai.output.messages` parts of type
`tool_call`, transcribed from `requests.extract_requests`; every other encoding is left to Python.

A span's requests are the SQL's ("gen_ai") when its output messages hold tool calls the SQL reads
exactly; none when no reader could find a call on it; Python's otherwise (other encodings, the
fenced-JSON and DSPy text fallbacks, values whose Python `str()` differs from their JSON text).
"""

from __future__ import annotations

from collector.recognise._sql_executions import PYTHON_SAFE_TEXT, STRICT_JSON_TEXT
from collector.recognise._sql_facts import attr, equals, is_integer, is_string, present

_MESSAGES = attr("gen_ai.output.messages")
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_MESSAGES_TEXT = f"({_MESSAGES} ->> '$')"

# The messages read in one parse into the shape `_output_messages` and `_parts` walk: a message that
# is no object, parts that are no list and a part that is no object come out NULL, as Python skips
# them. Each call's name, id and arguments stay JSON text, so their types are still known. NULL when
# the text is not surely JSON to both parsers, or not a list (the span then goes to Python).
_SHAPE = '[{"parts": [{"type": "VARCHAR", "id": "JSON", "name": "JSON", "arguments": "JSON"}]}]'
_SAFE_MESSAGES = PYTHON_SAFE_TEXT.format(_MESSAGES_TEXT)
MESSAGES = f"""CASE WHEN {is_string(_MESSAGES)} THEN
        CASE WHEN {_SAFE_MESSAGES} THEN try(json_transform({_MESSAGES_TEXT}, '{_SHAPE}')) END
    ELSE try(json_transform({_MESSAGES}, '{_SHAPE}')) END"""

# Every `tool_call` part of every message, in order (`_output_tool_calls`).
CALLS = """coalesce(list_filter(flatten(list_transform(messages, lambda m: coalesce(m.parts, []))),
    lambda p: p.type = 'tool_call'), [])"""

# A call the SQL reads as Python does: a text name (or none), a text or integer id, arguments that are
# structured or surely-JSON text.
_NAME, _ID, _ARGUMENTS = "c.name::VARCHAR", "c.id::VARCHAR", "c.arguments::VARCHAR"
_STRICT_ARGUMENTS = STRICT_JSON_TEXT.format(f"({_ARGUMENTS} ->> '$')")
_CALL_SURE = f"""(coalesce({is_string(_NAME)} OR {_NAME} = 'null', true)
    AND coalesce(CASE WHEN {is_string(_ID)} THEN true ELSE {is_integer(_ID)} OR {_ID} = 'null' END, true)
    AND coalesce(CASE WHEN {is_string(_ARGUMENTS)} THEN {_STRICT_ARGUMENTS} ELSE true END, true))"""

# Whose the span's requests are, in `extract_requests`' order.
OWNER = f"""
CASE
    WHEN nulls THEN 'python'
    WHEN {equals("gen_ai.operation.name", "invoke_agent")} THEN NULL
    WHEN {present("langfuse.observation.type")} OR {present("mlflow.spanType")} THEN 'python'
    WHEN name = 'haystack.agent.step.llm' THEN 'python'
    WHEN name = 'haystack.component.run' AND {present("haystack.component.output")} THEN 'python'
    WHEN {is_string(attr("ai.operationId"))}
         AND (suffix({attr("ai.operationId")} ->> '$', '.doGenerate')
              OR suffix({attr("ai.operationId")} ->> '$', '.doStream')) THEN 'python'
    WHEN {present("gen_ai.output.messages")} AND messages IS NULL THEN 'python'
    WHEN len(calls) > 0 THEN
        CASE WHEN list_bool_and(list_transform(calls, lambda c: {_CALL_SURE})) THEN 'gen_ai' ELSE 'python' END
    WHEN list_contains(event_names, '{_DETAILS_EVENT}') OR {present("gcp.vertex.agent.llm_response")}
         OR starts_with(coalesce(scope_name, ''), 'openinference.instrumentation.crewai')
         OR ({equals("gen_ai.operation.name", "chat")} AND len(event_names) > 0)
         OR other_encodings OR {present("logfire.msg_template")} THEN 'python'
END"""

# The calls of a span whose requests the SQL reads, as `requests._request` builds each.
CALL_FIELDS = ("position", "tool_name", "call_id", "arguments", "arguments_raw")
REQUESTS = f"""list_transform(calls, lambda c, i: struct_pack(
    position := i - 1,
    tool_name := coalesce({_NAME} ->> '$', ''),
    call_id := nullif({_ID} ->> '$', ''),
    arguments := CASE WHEN {is_string(_ARGUMENTS)} THEN {_ARGUMENTS} ->> '$'
                      WHEN {_ARGUMENTS} <> 'null' THEN {_ARGUMENTS} END,
    arguments_raw := CASE WHEN {is_string(_ARGUMENTS)} THEN {_ARGUMENTS} ->> '$' END))"""

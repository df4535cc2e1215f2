"""The per-span facts every SQL adapter reads, parsed once per span: the SQL side of recognition.

Spans arrive as the `spans` table stores them (collector/store/rows.py, `SPAN_SCHEMA`): attributes,
events and resource attributes as JSON text. `json_transform` reads every attribute an adapter looks at
in one parse, each kept as JSON so its type is still known: Python's adapters treat a string, a number
and a boolean differently, and the SQL must tell them apart to give the same answer.

The helpers below write the SQL for one attribute read the way `conventions.py` reads it, so each
adapter's query reads like its Python twin.
"""

from __future__ import annotations

import json

# Every attribute an execution or request adapter written in SQL reads.
KEYS = (
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.status",
    "gen_ai.output.messages",
    "gcp.vertex.agent.tool_call_args",
    "gcp.vertex.agent.llm_response",
    "openinference.span.kind",
    "tool_arguments",
    "tool_response",
    "mcp.method.name",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "tool.name",
    "tool.id",
    "tool_call.id",
    "input.value",
    "output.value",
    "ai.operationId",
    "ai.toolCall.name",
    "ai.toolCall.args",
    "ai.toolCall.result",
    "ai.toolCall.id",
    "ai.response.toolCalls",
    "haystack.tool.name",
    "haystack.tool.error",
    "haystack.component.output",
    "tracescore.tool.paused",
    "tracescore.tool.pause_reason",
    "tracescore.tool.from_history",
    "pydantic_ai.tool.deferral.name",
    "pydantic_ai.tool.failure_stage",
    "error.type",
    "logfire.msg",
    "langfuse.observation.type",
    "mlflow.spanType",
    "logfire.msg_template",
)

# Attributes read as text (Python's `_text`: `str(value)` unless absent or empty). `str()` of an integer
# is its JSON text; of a boolean, a float or a structure it is not, so a span carrying one of those in
# such a key is left to the Python adapters.
TEXT_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "openinference.span.kind",
    "mcp.method.name",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "tool.name",
    "tool.id",
    "tool_call.id",
    "ai.operationId",
    "ai.toolCall.name",
    "ai.toolCall.id",
    "tracescore.tool.pause_reason",
    "pydantic_ai.tool.deferral.name",
    "pydantic_ai.tool.failure_stage",
    "error.type",
    "logfire.msg",
    "gen_ai.tool.status",
)

_STRUCTURE = json.dumps(dict.fromkeys(KEYS, "JSON"))
# Each value's JSON text as VARCHAR: comparing a JSON value with a literal costs a conversion per row
# (~0.35 µs each, bench/sql_recognition.py); JSON functions read VARCHAR alike.
_AS_TEXT = "STRUCT(" + ", ".join(f'"{key}" VARCHAR' for key in KEYS) + ")"


def attr(key: str) -> str:
    """The attribute as JSON (SQL NULL when absent)."""
    return f'a."{key}"'


# The type of a JSON value told by its first character: DuckDB's `json_type` parses the value again,
# which cost ~1 µs a call (bench/sql_recognition.py). Values taken out of a document by json_transform
# or json_extract are written without leading blanks; text cast to JSON keeps its own, so it is
# trimmed (`ltrim`) where it is tested.
def is_string(json: str) -> str:
    return f"starts_with({json}, '\"')"


def is_object(json: str) -> str:
    return f"starts_with({json}, '{{')"


def is_array(json: str) -> str:
    return f"starts_with({json}, '[')"


def is_integer(json: str) -> str:
    """An integer DuckDB reads exactly (Python's are unbounded; a longer one goes to Python)."""
    return f"regexp_full_match({json}, '-?[0-9]{{1,18}}')"


def text(key: str) -> str:
    """The attribute as Python's `_text` reads it: NULL when absent or empty."""
    return f"nullif({attr(key)} ->> '$', '')"


def equals(key: str, value: str) -> str:
    """The attribute is this string (Python's `attrs.get(key) == value`); the values compared are plain
    ASCII, which JSON writes with no escapes."""
    return f"coalesce({attr(key)} = '\"{value}\"', false)"


def is_true(key: str) -> str:
    """The attribute is the boolean true (Python's `attrs.get(key) is True`)."""
    return f"coalesce({attr(key)} = 'true', false)"


def present(key: str) -> str:
    """The attribute is there (a null value is sent to Python: see `_NULL_VALUE`)."""
    return f"({attr(key)} IS NOT NULL)"


def stored_value(expression: str) -> str:
    """A value as the executions table is written from Python: text as it is, anything else as JSON."""
    return f"CASE WHEN {is_string(expression)} THEN {expression} ->> '$' ELSE {expression}::VARCHAR END"


def _odd_text(json: str) -> str:
    """Not absent, not text, not an integer: Python's `str()` of it is not its JSON text."""
    return f"coalesce(NOT ({is_string(json)} OR {is_integer(json)}), false)"


def _all_text(values: list[str]) -> str:
    """Every one of these JSON values is absent or text: their first characters are all quotes (most
    spans; the finer test, a regex per value, runs only where it is not so)."""
    firsts = ", ".join(f"left({v}, 1)" for v in values)
    return f"""replace(concat({firsts}), '"', '') = ''"""


_TEXT_VALUES = [attr(k) for k in TEXT_KEYS]
_ODD_TEXT = f"""(CASE WHEN {_all_text(_TEXT_VALUES)} THEN false
    ELSE {" OR ".join(_odd_text(v) for v in _TEXT_VALUES)} END)"""
# A null attribute value (an unset AnyValue): Python tells "present as None" from "absent", which
# json_transform does not. Inside a string value the quote before `:null` is escaped, so this finds
# nulls of the attributes themselves (and of structured values: sent to Python too, to be safe).
_NULL_VALUE = r"""(contains(attributes, '":null') AND regexp_matches(attributes, '[^\\]":null[,}]'))"""


_EXCEPTION_VALUES = [
    f"""(exception -> '$."{key}"')::VARCHAR""" for key in ("exception.type", "exception.message")
]
_ODD_EXCEPTION = f"""(exception IS NOT NULL AND CASE WHEN {_all_text(_EXCEPTION_VALUES)} THEN false
    ELSE {" OR ".join(_odd_text(v) for v in _EXCEPTION_VALUES)} END)"""


# Requests in encodings the SQL does not read: the flattened keys of OpenInference and OpenLLMetry, and
# the text that may hold calls written as fenced JSON or DSPy's fields (collector/recognise/requests.py).
_OTHER_ENCODINGS = """(contains(attributes, '"llm.output_messages.')
    OR contains(attributes, '"gen_ai.completion.')
    OR contains(attributes, '```') OR contains(attributes, '[[ ## next_tool_name ## ]]')
    OR contains(attributes, '"mastra.model_step.output"'))"""

# A span whose text attributes Python's `str()` would read otherwise than their JSON text.
ODD = f"({_ODD_TEXT} OR {_ODD_EXCEPTION})"


def facts(relation: str) -> str:
    """The facts of each span of `relation` (a table or view with the `spans` table's columns)."""
    return f"""
    SELECT
        trace_id, span_id, parent_span_id, name, kind, status_code,
        coalesce(status_message, '') AS status_message, service_name, scope_name,
        epoch_ns(start_time) AS start_ns, epoch_ns(end_time) AS end_ns,
        a, event_names, exception,
        {_OTHER_ENCODINGS} AS other_encodings,
        {_NULL_VALUE} AS nulls
    FROM (
        SELECT *,
            json_transform(attributes, '{_STRUCTURE}')::{_AS_TEXT} AS a,
            CASE WHEN events = '[]' THEN []::VARCHAR[]
                 ELSE json_extract_string(events, '$[*].name') END AS event_names,
            CASE WHEN events = '[]' THEN NULL
                 ELSE list_filter(json_extract(events, '$[*]'), lambda e: e ->> 'name' = 'exception')[1]
                      -> 'attributes' END AS exception
        FROM {relation}
    )
    """

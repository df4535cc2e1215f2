"""Request-side evidence: the tool calls a model asked for, read off chat/LLM spans.

Three encodings (DESIGN §3): OTel GenAI `gen_ai.output.messages` parts of type `tool_call`; OpenInference
flattened `llm.output_messages.<i>.message.tool_calls.<j>.tool_call.*`; old OpenLLMetry flattened
`gen_ai.completion.<i>.tool_calls.<j>.*`.
"""

from __future__ import annotations

import re
from typing import Any

from collector._content import load_json_text, parse_arguments
from collector._model import Span, ToolRequest

_OPENINFERENCE = re.compile(
    r"llm\.output_messages\.(\d+)\.message\.(?:tool_calls|contents)\.(\d+)\."
    r"(?:message_content\.)?tool_call\.(id|function\.name|function\.arguments)$"
)
_OPENLLMETRY = re.compile(r"gen_ai\.completion\.(\d+)\.tool_calls\.(\d+)\.(id|name|arguments)$")
_FIELD = {"function.name": "name", "function.arguments": "arguments"}


def _flattened(span: Span, pattern: re.Pattern[str], prefix: str) -> dict[tuple[int, int], dict[str, Any]]:
    calls: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if not key.startswith(prefix):
            continue
        match = pattern.match(key)
        if match:
            field = _FIELD.get(match.group(3), match.group(3))
            calls.setdefault((int(match.group(1)), int(match.group(2))), {})[field] = value
    return calls


def _request(span: Span, position: int, call: dict[str, Any], encoding: str) -> ToolRequest:
    call_id = call.get("id")
    return ToolRequest(
        trace_id=span.trace_id,
        span_id=span.span_id,
        position=position,
        tool_name=str(call.get("name") or ""),
        call_id=str(call_id) if call_id not in (None, "") else None,
        arguments=parse_arguments(call.get("arguments")),
        requested_ns=span.end_ns,
        encoding=encoding,
    )


# The semconv event that may carry `gen_ai.output.messages` instead of the span (Strands, latest mode).
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"


def _output_tool_calls(value: Any) -> list[tuple[dict[str, Any], str]]:
    """The `tool_call` parts of a `gen_ai.output.messages` value (JSON text or structured)."""
    messages = load_json_text(value)
    calls: list[tuple[dict[str, Any], str]] = []
    for message in messages if isinstance(messages, list) else []:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_call":
                calls.append((part, "gen_ai"))
    return calls


def extract_requests(span: Span) -> list[ToolRequest]:
    """Every tool call requested on this span, in the order the model gave them."""
    attrs = span.attributes
    calls = _output_tool_calls(attrs.get("gen_ai.output.messages"))
    if "gen_ai.output.messages" not in attrs:
        # Only when the span attribute is absent: an emitter that sets both would count every call twice.
        for event in span.events:
            if event.name == _DETAILS_EVENT:
                calls.extend(_output_tool_calls(event.attributes.get("gen_ai.output.messages")))
    if not calls and any(key.startswith("llm.output_messages.") for key in attrs):
        for _, call in sorted(_flattened(span, _OPENINFERENCE, "llm.output_messages.").items()):
            calls.append((call, "openinference"))
    if not calls and any(key.startswith("gen_ai.completion.") for key in attrs):
        for _, call in sorted(_flattened(span, _OPENLLMETRY, "gen_ai.completion.").items()):
            calls.append((call, "openllmetry"))
    return [_request(span, position, call, encoding) for position, (call, encoding) in enumerate(calls)]

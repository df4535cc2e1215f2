"""Request-side evidence: the tool calls a model asked for, read off chat/LLM spans.

Three encodings (DESIGN §3): OTel GenAI `gen_ai.output.messages` parts of type `tool_call`; OpenInference
flattened `llm.output_messages.<i>.message.tool_calls.<j>.tool_call.*`; old OpenLLMetry flattened
`gen_ai.completion.<i>.tool_calls.<j>.*`.

A fourth, only when a span has none of those: calls the model wrote as a fenced JSON block in its own
output text (providers and prompts without native tool calling do this), stored with encoding
`text_json`. The parser is deliberately narrow so prose is never read as a call: see `_text_call`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from collector.model.domain import Span, ToolRequest
from collector.recognise._content import load_json_text, parse_arguments

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


def _output_messages(value: Any) -> list[dict[str, Any]]:
    """The messages of a `gen_ai.output.messages` value (JSON text or structured)."""
    messages = load_json_text(value)
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _parts(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for message in messages:
        parts = message.get("parts")
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                yield part


def _output_tool_calls(messages: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    return [(part, "gen_ai") for part in _parts(messages) if part.get("type") == "tool_call"]


# --- calls written as text: a fenced JSON block in the model's output --------------------------------

# A fence on its own line, tagged `json` or untagged, closed by a fence on its own line.
_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(?:json)?[ \t]*\n(.*?)\n[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL | re.I
)
_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
_NAME_KEYS = ("name", "tool")
_ARGUMENT_KEYS = ("arguments", "args", "parameters")
_OPTIONAL_KEYS = {"id", "type"}


def _text_call(item: Any) -> dict[str, Any] | None:
    """One call written as JSON, or None. Only an object with exactly one name key (`name`/`tool`),
    exactly one arguments key (`arguments`/`args`/`parameters`) holding an object (or JSON text of
    one), and at most `id` and `type` (`function`/`tool_call`) besides; the name must look like an
    identifier. Anything else (prose, a JSON answer that happens to have a `name`) is not a call."""
    if not isinstance(item, dict):
        return None
    names = [k for k in _NAME_KEYS if k in item]
    arguments_keys = [k for k in _ARGUMENT_KEYS if k in item]
    if len(names) != 1 or len(arguments_keys) != 1:
        return None
    if set(item) - {names[0], arguments_keys[0]} - _OPTIONAL_KEYS:
        return None
    if item.get("type", "function") not in ("function", "tool_call"):
        return None
    name, arguments = item[names[0]], item[arguments_keys[0]]
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        return None
    if not isinstance(load_json_text(arguments), dict):
        return None
    call_id = item.get("id")
    return {"name": name, "arguments": arguments, "id": call_id if isinstance(call_id, str) else None}


def text_calls(text: str) -> list[dict[str, Any]]:
    """Calls in the fenced JSON blocks of one text: a block holds one call or an array of calls, and
    counts only if every item in it is a call."""
    if "```" not in text:
        return []
    calls: list[dict[str, Any]] = []
    for block in _FENCE.findall(text):
        value = load_json_text(block)
        items = value if isinstance(value, list) else [value]
        parsed = [_text_call(item) for item in items]
        if items and all(parsed):
            calls.extend(call for call in parsed if call)
    return calls


_OPENINFERENCE_TEXT = re.compile(
    r"llm\.output_messages\.(\d+)\.message\.(?:content|contents\.(\d+)\.message_content\.text)$"
)
_OPENLLMETRY_TEXT = re.compile(r"gen_ai\.completion\.(\d+)\.content$")


def _assistant(role: Any) -> bool:
    return role is None or role == "assistant"


def _output_texts(span: Span, messages: list[dict[str, Any]], prefixes: tuple[str, ...]) -> list[str]:
    """The model's own output text on this span, in order (never input messages: those are history).
    `prefixes` are the flattened output prefixes the span has, so other spans cost nothing here."""
    texts = [
        part["content"]
        for message in messages
        if _assistant(message.get("role"))
        for part in _parts([message])
        if part.get("type") == "text" and isinstance(part.get("content"), str)
    ]
    if not prefixes:
        return texts
    attrs = span.attributes
    flattened: list[tuple[int, int, str]] = []
    for key, value in attrs.items():
        if not key.startswith(prefixes) or not isinstance(value, str) or "```" not in value:
            continue
        match = _OPENINFERENCE_TEXT.match(key)
        if match and _assistant(attrs.get(f"llm.output_messages.{match.group(1)}.message.role")):
            flattened.append((int(match.group(1)), int(match.group(2) or -1), value))
        match = _OPENLLMETRY_TEXT.match(key)
        if match and _assistant(attrs.get(f"gen_ai.completion.{match.group(1)}.role")):
            flattened.append((int(match.group(1)), -1, value))
    return texts + [text for _, _, text in sorted(flattened)]


def extract_requests(span: Span) -> list[ToolRequest]:
    """Every tool call requested on this span, in the order the model gave them."""
    attrs = span.attributes
    messages = _output_messages(attrs.get("gen_ai.output.messages"))
    if "gen_ai.output.messages" not in attrs:
        # Only when the span attribute is absent: an emitter that sets both would count every call twice.
        for event in span.events:
            if event.name == _DETAILS_EVENT:
                messages.extend(_output_messages(event.attributes.get("gen_ai.output.messages")))
    calls = _output_tool_calls(messages)
    if calls:
        return [_request(span, position, call, "gen_ai") for position, (call, _) in enumerate(calls)]
    # One pass over the keys for both flattened encodings (this runs for every span).
    openinference = openllmetry = False
    for key in attrs:
        if key.startswith("llm.output_messages."):
            openinference = True
        elif key.startswith("gen_ai.completion."):
            openllmetry = True
    if openinference:
        for _, call in sorted(_flattened(span, _OPENINFERENCE, "llm.output_messages.").items()):
            calls.append((call, "openinference"))
    if not calls and openllmetry:
        for _, call in sorted(_flattened(span, _OPENLLMETRY, "gen_ai.completion.").items()):
            calls.append((call, "openllmetry"))
    if not calls and (messages or openinference or openllmetry):
        # The fallback, never beside native calls (the same call would count twice).
        prefixes = ("llm.output_messages.",) * openinference + ("gen_ai.completion.",) * openllmetry
        for text in _output_texts(span, messages, prefixes):
            calls.extend((call, "text_json") for call in text_calls(text))
    return [_request(span, position, call, encoding) for position, (call, encoding) in enumerate(calls)]

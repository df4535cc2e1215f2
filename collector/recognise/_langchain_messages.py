"""LangChain's messages as instrumentations serialise them, recognised by their shape in any scope.

LangChain (Python and JavaScript alike) writes a message in one of two forms, and instrumentations put
them on spans as they are, often inside a wrapper of their own:

- the serialisable constructor form (`langchain_core` `Serializable.to_json`, `@langchain/core`
  `load/serializable.ts`): `{"lc": 1, "type": "constructor", "id": [..., "ToolMessage"], "kwargs":
  {"content": ..., "tool_call_id": ..., ...}}`;
- the dict form (`langchain_core.messages.message_to_dict`): `{"type": "tool", "data": {"content": ...,
  "tool_call_id": ..., ...}}`.

Seen on: OpenInference's LangChain.js instrumentation (`@arizeai/openinference-instrumentation-langchain`
4.1.1, `tracer.ts`: a tool run's outputs, `{"output": <ToolMessage>}`, as `output.value`), OpenInference's
Python one (openinference-instrumentation-langchain 0.1.80, `_tracer._output_value`: the dict form, bare),
and OpenLLMetry's LangChain callback (opentelemetry-instrumentation-langchain 0.62.4, `on_tool_end`:
`{"output": <ToolMessage>, "kwargs": {...}}` as `traceloop.entity.output`). A tool returned the
message's `content`; its `tool_call_id` is the model's call id. The same holds for a model's answer:
an `AIMessage`'s `tool_calls` are the calls it asked for (`llm_tool_calls`).
"""

from __future__ import annotations

import re
from typing import Any

from collector.recognise._content import load_json_text

# The wrappers instrumentations put around a run's output: `{"output": ...}` (OpenInference JS) and
# `{"output": ..., "kwargs": ...}` (OpenLLMetry's callback).
_WRAPPERS = (frozenset({"output"}), frozenset({"output", "kwargs"}))


def _constructor(value: Any, class_name: str) -> dict[str, Any] | None:
    """The `kwargs` of a serialised constructor of this LangChain class, else None."""
    if not (isinstance(value, dict) and value.get("type") == "constructor" and "lc" in value):
        return None
    path, fields = value.get("id"), value.get("kwargs")
    if isinstance(path, list) and path[-1:] == [class_name] and isinstance(fields, dict):
        return fields
    return None


def _tool_message_fields(value: Any) -> dict[str, Any] | None:
    fields = _constructor(value, "ToolMessage")
    if fields is None and isinstance(value, dict) and value.get("type") == "tool":
        data = value.get("data")
        fields = data if isinstance(data, dict) else None
    if fields is not None and "content" in fields and "tool_call_id" in fields:
        return fields
    return None


def tool_message(value: Any) -> tuple[Any, str | None] | None:
    """A tool's result and call id out of a serialised ToolMessage, bare or in an instrumentation's
    `{"output": ...}` wrapper (JSON text or structured); None when the value is no such message."""
    loaded = load_json_text(value)
    fields = _tool_message_fields(loaded)
    if fields is None and isinstance(loaded, dict) and frozenset(loaded) in _WRAPPERS:
        fields = _tool_message_fields(loaded["output"])
    if fields is None:
        return None
    call_id = fields["tool_call_id"]
    return fields["content"], call_id if isinstance(call_id, str) and call_id else None


def llm_tool_calls(value: Any) -> list[dict[str, Any]]:
    """The calls a chat model asked for, out of its run's serialised output, `{"generations": [[{"message":
    <AIMessage>}, ...]]}` (LangChain's `LLMResult`, as OpenInference's LangChain.js instrumentation 4.1.1
    records an LLM span's `output.value`): each `tool_calls` item `{"id", "name", "args"}`, in order."""
    loaded = load_json_text(value)
    generations = loaded.get("generations") if isinstance(loaded, dict) else None
    calls: list[dict[str, Any]] = []
    for batch in generations if isinstance(generations, list) else []:
        for generation in batch if isinstance(batch, list) else []:
            message = generation.get("message") if isinstance(generation, dict) else None
            fields = _constructor(message, "AIMessage") or _constructor(message, "AIMessageChunk")
            requested = fields.get("tool_calls") if fields else None
            for call in requested if isinstance(requested, list) else []:
                if isinstance(call, dict) and isinstance(call.get("name"), str):
                    calls.append({"name": call["name"], "arguments": call.get("args"), "id": call.get("id")})
    return calls


# LangChain.js's tracer turns a run's error into text as `message + "\n\n" + stack` (`@langchain/core`
# 1.4.0, `tracers/base.js` `stringifyError`), and OpenInference's LangChain.js instrumentation writes that
# text as the span's status and its exception's message. A JavaScript stack begins `Name: message`.
_JS_STACK = re.compile(r"[\w$.]+: (?P<message>.*?)(?:\n\s+at .*)?", re.S)


def without_js_stack(text: str) -> str:
    """The error's own message, without the JavaScript stack LangChain.js appends; other text as it is."""
    message, separator, stack = text.partition("\n\n")
    if not separator:
        return text
    match = _JS_STACK.fullmatch(stack)
    return message if match and match.group("message") == message else text


def unwrap_tool_message(result: Any, call_id: str | None) -> tuple[Any, str | None]:
    """A tool span's result and call id, with a serialised ToolMessage read: its content, and its call id
    where the span named none; anything else as it is."""
    message = tool_message(result)
    if message is None:
        return result, call_id
    return message[0], call_id or message[1]

"""Shapes of chat content several observability SDKs record whole, recognised by shape, not by scope.

- a tool's result recorded as the LangChain `ToolMessage` it became, dumped flat (`message.model_dump()`:
  `{"content", "type": "tool", "tool_call_id", …}`): the result is its `content`;
- a model's answer recorded as an assistant message with `tool_calls`, either OpenAI's
  (`{"id", "type": "function", "function": {"name", "arguments"}}`) or LangChain's (`{"name", "args",
  "id", "type": "tool_call"}`), alone or as an OpenAI chat completion (`{"choices": [{"message": …}]}`).

The Langfuse SDK (`_langfuse`) and MLflow Tracing (`_mlflow`) both record content this way.
"""

from __future__ import annotations

from typing import Any

from collector.recognise._content import load_json_text


def tool_message_content(value: Any) -> Any:
    """The content of a flat LangChain ToolMessage; the value itself when it is none."""
    loaded = load_json_text(value) if isinstance(value, str) and value.startswith("{") else value
    if (
        isinstance(loaded, dict)
        and loaded.get("type") == "tool"
        and {"content", "tool_call_id"} <= set(loaded)
    ):
        return loaded["content"]
    return value


def json_text_string(value: Any) -> str | None:
    """A string an SDK wrote as JSON text (`"call_paris"` with its quotes), or as it is."""
    if not isinstance(value, str) or value == "":
        return None
    loaded = load_json_text(value)
    return loaded if isinstance(loaded, str) and loaded else value


def _call(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):  # OpenAI
        return {"name": function["name"], "arguments": function.get("arguments"), "id": item.get("id")}
    if isinstance(item.get("name"), str) and "args" in item:  # LangChain
        return {"name": item["name"], "arguments": item["args"], "id": item.get("id")}
    return None


def _messages(answer: Any) -> list[Any]:
    if isinstance(answer, dict) and isinstance(answer.get("choices"), list):
        return [c.get("message") for c in answer["choices"] if isinstance(c, dict)]
    return [answer]


def assistant_tool_calls(value: Any) -> list[dict[str, Any]]:
    """The tool calls of a model's answer recorded as an assistant message or a chat completion;
    `{name, arguments, id}` each. Every item of a `tool_calls` list must be a call, else none is read."""
    calls: list[dict[str, Any]] = []
    for message in _messages(load_json_text(value)):
        requested = message.get("tool_calls") if isinstance(message, dict) else None
        if not isinstance(requested, list):
            continue
        parsed = [_call(item) for item in requested]
        if all(parsed):
            calls.extend(call for call in parsed if call)
    return calls

"""Pydantic Logfire's own span shapes: tool calls and the model's requested calls (logfire 5.4.0).

Logfire writes every span through `logfire.span(msg_template, **attributes)`: the span is named after
the template and carries `logfire.msg_template` (the template) and `logfire.msg` (it filled in), with
each non-scalar attribute as JSON text. That key, Logfire's own on every span it makes, is how its
shapes are told, not an instrumentation scope: the same shapes come from `logfire.openai_agents`,
`logfire.openai` and `logfire.anthropic`, and from any user code that copies them.

Where Logfire instruments a framework that records the GenAI conventions itself (pydantic-ai through
`logfire.instrument_pydantic_ai()`), or emits them (`gen_ai.output.messages`, its OpenAI and Anthropic
instrumentation with semconv version 2, the default), the `gen_ai` readers already apply; this module
reads what only Logfire writes:

- **A tool call of the OpenAI Agents SDK** (`logfire/_internal/integrations/openai_agents.py`): the
  SDK's `FunctionSpanData` as template `Function: {name}` with its `export()` fields: `name` (the tool),
  `input` (the arguments, JSON text), `output` (`str()` of the result), and on failure `error`, JSON
  `{"message", "data"}` (the SDK's `SpanError`), with status ERROR. No call id: the request joined to
  it gives one.
- **The model's requested calls**, on the span of a model call:
  - `response`: the whole Responses API object (the Agents SDK's `Responses API` span), its `output`
    items of type `function_call` (`call_id`, `name`, `arguments`);
  - `response_data`: semconv version 1 of Logfire's OpenAI and Anthropic instrumentation,
    `{"message": {"tool_calls": [{"id", "function": {"name", "arguments"}}]}}`. For Anthropic
    (`gen_ai.system` or `gen_ai.provider.name` `anthropic`) `arguments` is the tool-use block dumped
    with only its input, `{"input": {…}}`: the input is the arguments;
  - else `events`: OTel-style event dicts, the model's input first and its output after; the output is
    the assistant messages after the last other message (a model's input never ends with a call still
    unanswered), their `tool_calls` as above. Earlier assistant messages are history, not requests.
"""

from __future__ import annotations

from typing import Any

from collector.model.domain import Span
from collector.recognise._adapted import Content
from collector.recognise._content import load_json_text, parse_arguments, parse_result

TEMPLATE = "logfire.msg_template"
FUNCTION_TEMPLATE = "Function: {name}"


def logfire_function(span: Span) -> Content | None:
    """The adapter of convention `logfire` (collector/recognise/conventions.py): a `Function: {name}` span."""
    attrs = span.attributes
    if attrs.get(TEMPLATE) != FUNCTION_TEMPLATE or not isinstance(attrs.get("name"), str):
        return None
    return Content(
        "logfire",
        attrs["name"],
        parse_arguments(attrs.get("input")),
        parse_result(attrs.get("output")),
        None,
        error_message=function_error(attrs),
    )


def function_error(attrs: dict[str, Any]) -> str | None:
    """The failure the SDK recorded on a tool call, `message: data.error` (or the message alone)."""
    error = load_json_text(attrs.get("error"))
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return None
    data = error.get("data")
    detail = data.get("error") if isinstance(data, dict) else None
    return f"{error['message']}: {detail}" if isinstance(detail, str) and detail else error["message"]


def _responses_calls(response: Any) -> list[dict[str, Any]]:
    output = response.get("output") if isinstance(response, dict) else None
    return [
        {"name": item.get("name"), "arguments": item.get("arguments"), "id": item.get("call_id")}
        for item in (output if isinstance(output, list) else [])
        if isinstance(item, dict) and item.get("type") == "function_call"
        if isinstance(item.get("name"), str)
    ]


def _anthropic(attrs: dict[str, Any]) -> bool:
    return "anthropic" in (attrs.get("gen_ai.system"), attrs.get("gen_ai.provider.name"))


def _message_calls(message: Any, anthropic: bool) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    found = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        arguments = function.get("arguments")
        if anthropic:
            dumped = load_json_text(arguments)
            if isinstance(dumped, dict) and set(dumped) == {"input"}:
                arguments = dumped["input"]
        found.append({"name": function["name"], "arguments": arguments, "id": call.get("id")})
    return found


def _output_events(events: Any) -> list[dict[str, Any]]:
    """The trailing assistant messages of an event list: the model's output, after its input."""
    items = [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []
    output: list[dict[str, Any]] = []
    for event in reversed(items):
        if event.get("event.name") != "gen_ai.assistant.message" and event.get("role") != "assistant":
            break
        output.insert(0, event)
    return output


def requested_calls(span: Span) -> list[dict[str, Any]]:
    """The calls a model asked for on a Logfire model-call span (`name`, `arguments`, `id`), in order."""
    attrs = span.attributes
    if TEMPLATE not in attrs:
        return []
    if "response" in attrs:
        return _responses_calls(load_json_text(attrs["response"]))
    anthropic = _anthropic(attrs)
    if "response_data" in attrs:
        data = load_json_text(attrs["response_data"])
        return _message_calls(data.get("message") if isinstance(data, dict) else None, anthropic)
    if "events" in attrs:
        events = _output_events(load_json_text(attrs["events"]))
        return [call for event in events for call in _message_calls(event, anthropic)]
    return []

"""The Langfuse Python SDK's own spans (OpenTelemetry-based, v3 and later; read on langfuse 5.2.0).

Every observation is a span of scope `langfuse-sdk` whose kind is `langfuse.observation.type`
(`_client/attributes.py`, `LangfuseOtelSpanAttributes.OBSERVATION_TYPE`): `tool` for a tool call, whether
from `@observe(as_type="tool")` or the LangChain `CallbackHandler` (`langchain/CallbackHandler.py`,
`on_tool_start`), `generation` for a model call. Content is JSON text (`_client/attributes.py`,
`_serialize`):

- `langfuse.observation.input`: the callback's tool input (`{"city": "Paris"}`), or `@observe`'s record
  of the bound call (`_client/observe.py`, `_get_input_from_func_args`: `{"args": [...], "kwargs":
  {...}}`). The call's arguments are the kwargs; the record names no parameters, so positional values
  stay under `args` beside them (as for OpenLLMetry's decorators);
- `langfuse.observation.output`: the tool's return value (a string is written as it is), or the LangChain
  ToolMessage it became (its `content` is the result);
- `langfuse.observation.metadata.tool_call_id`: the model's call id (the callback's; metadata values are
  JSON text, so the id arrives quoted);
- a failure: `langfuse.observation.level = ERROR` and `langfuse.observation.status_message` (with the
  span's status ERROR, which `@observe` and the callback both set).

A generation's `langfuse.observation.output` is the model's answer: an assistant message with
`tool_calls` (`_message_shapes`), the requests.
"""

from __future__ import annotations

from typing import Any

from collector.model.domain import Arguments, Span
from collector.recognise._content import parse_arguments, parse_result, unwrap_traceloop
from collector.recognise._message_shapes import assistant_tool_calls, json_text_string, tool_message_content

TYPE = "langfuse.observation.type"
LEVEL = "langfuse.observation.level"
STATUS_MESSAGE = "langfuse.observation.status_message"
_INPUT = "langfuse.observation.input"
_OUTPUT = "langfuse.observation.output"
_CALL_ID = "langfuse.observation.metadata.tool_call_id"


def langfuse_tool(span: Span) -> tuple[str, Arguments, Any, str | None] | None:
    """A tool observation's name, arguments, result and call id; None for any other span."""
    attrs = span.attributes
    if attrs.get(TYPE) != "tool":
        return None
    arguments = unwrap_traceloop(parse_arguments(attrs.get(_INPUT)))
    result = parse_result(tool_message_content(attrs.get(_OUTPUT)))
    return span.name, arguments, result, json_text_string(attrs.get(_CALL_ID))


def failed(attrs: dict[str, Any]) -> bool:
    return attrs.get(LEVEL) == "ERROR"


# LangGraph's `interrupt()` raises GraphInterrupt, which the CallbackHandler treats as control flow
# (`CONTROL_FLOW_EXCEPTION_TYPES`, `GraphBubbleUp`): level DEFAULT, status UNSET, no output, and the
# exception's text, the tuple of `Interrupt(value=…, id=…)` reprs, as the status message.
_INTERRUPT_TEXT = "(Interrupt("


def interrupted(convention: str, attrs: dict[str, Any]) -> bool:
    """A Langfuse tool observation stopped by a LangGraph interrupt: a call paused for a person."""
    message = attrs.get(STATUS_MESSAGE)
    return (
        convention == "langfuse"
        and not failed(attrs)
        and isinstance(message, str)
        and message.startswith(_INTERRUPT_TEXT)
        and _OUTPUT not in attrs
    )


def langfuse_requests(span: Span) -> list[dict[str, Any]] | None:
    """The calls a generation's answer asked for; None when the span is no Langfuse generation."""
    if span.attributes.get(TYPE) != "generation":
        return None
    return assistant_tool_calls(span.attributes.get(_OUTPUT))

"""Recognising tool executions: one adapter per convention, tried in priority order (DESIGN §3).

Sources for every attribute key: ../shared/reference/tool-span-conventions.md (cited in docs/conventions.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from collector.model.domain import NO_ARGUMENTS, STATUS_ERROR, Arguments, Span, ToolExecution
from collector.recognise._content import load_json_text, parse_arguments, parse_result, unwrap_traceloop

PAUSE_REASONS = ("confirmation", "user_input", "external_execution")

# ADK turns human-in-the-loop into synthetic tool calls with these names.
_ADK_PAUSE_CALLS = {
    "adk_request_confirmation": "confirmation",
    "adk_request_input": "user_input",
    "adk_request_credential": "user_input",
}
_PYDANTIC_DEFERRALS = {"ApprovalRequired": "confirmation", "CallDeferred": "external_execution"}
# After parallel calls ADK adds an `execute_tool (merged)` span for its dev UI. It re-records calls whose own
# execute_tool spans are already there; taken as an execution it would be a tool nobody called.
_ADK_MERGED_TOOLS = "(merged tools)"


@dataclass(frozen=True, slots=True)
class _Content:
    """The convention-specific part of an execution: which name, arguments, result and call id."""

    convention: str
    tool_name: str
    arguments: Arguments
    result: Any
    call_id: str | None


def _text(attrs: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    return None


def _first_present(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in attrs and attrs[key] is not None:
            return attrs[key]
    return None


def _strands_content(span: Span) -> tuple[Arguments, Any, str | None]:
    """Strands puts tool content in span events, in its latest or its legacy shape."""
    arguments, result, call_id = NO_ARGUMENTS, None, None
    for event in span.events:
        attrs = event.attributes
        if event.name == "gen_ai.client.inference.operation.details":
            for message in load_json_text(attrs.get("gen_ai.input.messages")) or []:
                for part in _parts(message):
                    if part.get("type") == "tool_call":
                        arguments = parse_arguments(part.get("arguments"))
                        call_id = call_id or _maybe_str(part.get("id"))
            for message in load_json_text(attrs.get("gen_ai.output.messages")) or []:
                for part in _parts(message):
                    if part.get("type") == "tool_call_response":
                        result = part.get("response", part.get("result"))
        elif event.name == "gen_ai.tool.message":
            arguments = parse_arguments(attrs.get("content"))
            call_id = call_id or _maybe_str(attrs.get("id"))
        elif event.name == "gen_ai.choice":
            result = parse_result(attrs.get("message"))
    return arguments, result, call_id


def _parts(message: Any) -> list[dict[str, Any]]:
    if isinstance(message, dict) and isinstance(message.get("parts"), list):
        return [p for p in message["parts"] if isinstance(p, dict)]
    return []


def _maybe_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _genai(span: Span) -> _Content | None:
    attrs = span.attributes
    if attrs.get("gen_ai.operation.name") != "execute_tool" and span.name != "running tool":
        return None
    name = _text(attrs, "gen_ai.tool.name")
    if name is None and span.name.startswith("execute_tool "):
        name = span.name.removeprefix("execute_tool ")
    call_id = _text(attrs, "gen_ai.tool.call.id")
    if call_id == "<not specified>":  # ADK's placeholder
        call_id = None
    if "gen_ai.tool.call.arguments" in attrs:
        convention, args_value = "gen_ai", attrs["gen_ai.tool.call.arguments"]
        result = attrs.get("gen_ai.tool.call.result")
    elif "gcp.vertex.agent.tool_call_args" in attrs or span.resource.scope_name == "gcp.vertex.agent":
        convention, args_value = "adk", attrs.get("gcp.vertex.agent.tool_call_args")
        result = attrs.get("gcp.vertex.agent.tool_response")
    elif "tool_arguments" in attrs or span.name == "running tool":
        convention, args_value = "pydantic_ai_v2", attrs.get("tool_arguments")
        result = attrs.get("tool_response")
    elif any(e.name in _STRANDS_EVENTS for e in span.events):
        arguments, result, event_call_id = _strands_content(span)
        return _Content("strands", name or "", arguments, result, call_id or event_call_id)
    else:
        convention, args_value, result = "gen_ai", None, attrs.get("gen_ai.tool.call.result")
    return _Content(convention, name or "", parse_arguments(args_value), parse_result(result), call_id)


_STRANDS_EVENTS = frozenset(
    {"gen_ai.client.inference.operation.details", "gen_ai.tool.message", "gen_ai.choice"}
)


def _mcp(span: Span) -> _Content | None:
    attrs = span.attributes
    if attrs.get("mcp.method.name") != "tools/call":
        return None
    name = _text(attrs, "gen_ai.tool.name")
    if name is None and span.name.startswith("tools/call "):
        name = span.name.removeprefix("tools/call ")
    return _Content(
        "mcp",
        name or "",
        parse_arguments(attrs.get("gen_ai.tool.call.arguments")),
        parse_result(attrs.get("gen_ai.tool.call.result")),
        _text(attrs, "jsonrpc.request.id", "gen_ai.tool.call.id"),
    )


# OpenInference's OpenAI Agents processor records a handoff as a TOOL span `handoff to {agent}` with no
# `tool.name`; its input.value is the agent handing off (not arguments), output.value the one taking over.
_OPENAI_AGENTS_SCOPE = "openinference.instrumentation.openai_agents"


def _openinference(span: Span) -> _Content | None:
    attrs = span.attributes
    if attrs.get("openinference.span.kind") != "TOOL":
        return None
    if (
        span.resource.scope_name == _OPENAI_AGENTS_SCOPE
        and "tool.name" not in attrs
        and span.name.startswith("handoff to ")
    ):
        return _Content(
            "openinference", span.name, NO_ARGUMENTS, parse_result(attrs.get("output.value")), None
        )
    raw_args = _first_present(attrs, "input.value", "tool.parameters")
    return _Content(
        "openinference",
        _text(attrs, "tool.name") or span.name,
        parse_arguments(raw_args),
        parse_result(attrs.get("output.value")),
        _text(attrs, "tool.id", "tool_call.id"),
    )


def _traceloop(span: Span) -> _Content | None:
    attrs = span.attributes
    if attrs.get("traceloop.span.kind") != "tool":
        return None
    name = _text(attrs, "traceloop.entity.name", "gen_ai.tool.name") or span.name.removesuffix(".tool")
    raw_args = _first_present(attrs, "traceloop.entity.input", "gen_ai.tool.call.arguments")
    raw_result = _first_present(attrs, "traceloop.entity.output", "gen_ai.tool.call.result")
    return _Content(
        "traceloop",
        name,
        unwrap_traceloop(parse_arguments(raw_args)),
        parse_result(raw_result),
        _text(attrs, "gen_ai.tool.call.id"),
    )


# Priority order: MCP before GenAI because MCP spans may also carry gen_ai.operation.name=execute_tool
# but name their call id differently; Traceloop before GenAI because its openai-agents spans carry both.
ADAPTERS: tuple[Callable[[Span], _Content | None], ...] = (_mcp, _traceloop, _genai, _openinference)


def _exception_event(span: Span) -> dict[str, Any] | None:
    for event in span.events:
        if event.name == "exception":
            return event.attributes
    return None


_DISCRIMINATORS = frozenset(
    {"gen_ai.operation.name", "openinference.span.kind", "traceloop.span.kind", "mcp.method.name"}
)


def recognise_execution(span: Span) -> ToolExecution | None:
    """The tool execution this span records, or None when no convention claims it."""
    if _DISCRIMINATORS.isdisjoint(span.attributes) and span.name != "running tool":
        return None  # no adapter could claim it: skip them all
    for adapter in ADAPTERS:
        content = adapter(span)
        if content is not None:
            break
    else:
        return None
    if content.tool_name == _ADK_MERGED_TOOLS:
        return None
    attrs = span.attributes
    exception = _exception_event(span)
    exception_type = _text(exception, "exception.type") if exception else None

    paused, pause_reason = False, None
    deferral = _text(attrs, "pydantic_ai.tool.deferral.name")
    if attrs.get("tracescore.tool.paused") is True:
        paused = True
        reason = _text(attrs, "tracescore.tool.pause_reason")
        pause_reason = reason if reason in PAUSE_REASONS else None
    elif deferral is not None:
        paused, pause_reason = True, _PYDANTIC_DEFERRALS.get(deferral)
    elif content.tool_name in _ADK_PAUSE_CALLS:
        paused, pause_reason = True, _ADK_PAUSE_CALLS[content.tool_name]
    elif exception_type and exception_type.endswith("GraphInterrupt") and span.status_code != STATUS_ERROR:
        paused, pause_reason = True, "user_input"

    failure_stage = _text(attrs, "pydantic_ai.tool.failure_stage")
    # pydantic-ai records the ValidationError as an `exception` event as well; the stage says more (the tool
    # never ran), so it names the error type and the exception keeps the message.
    stage_type = f"{failure_stage}_failed" if failure_stage is not None else None
    error_type = _text(attrs, "error.type") or stage_type or exception_type
    error = (
        span.status_code == STATUS_ERROR
        or "error.type" in attrs
        or failure_stage is not None
        or attrs.get("gen_ai.tool.status") == "error"
    )
    if paused and deferral is not None:
        # pydantic-ai < v5 records the deferral as an exception with status ERROR: it is the pause mechanism,
        # not a failure of the tool.
        error, error_type = False, None
    error_message = None
    if error:
        error_message = span.status_message or (_text(exception, "exception.message") if exception else None)
        if error_message is None and failure_stage is not None:
            error_message = _text(attrs, "logfire.msg")
    return ToolExecution(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        tool_name=content.tool_name,
        call_id=content.call_id,
        arguments=content.arguments,
        result=content.result,
        error=error,
        error_type=error_type if error else None,
        error_message=error_message,
        paused=paused,
        pause_reason=pause_reason,
        from_history=attrs.get("tracescore.tool.from_history") is True,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        convention=content.convention,
        service_name=span.resource.service_name,
        scope_name=span.resource.scope_name,
    )

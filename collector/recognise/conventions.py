"""Recognising tool executions: one adapter per convention, tried in priority order (DESIGN §3).

Sources for every attribute key: ../shared/reference/tool-span-conventions.md (cited in docs/conventions.md).

Why this module is long: it is the one priority-ordered table of every convention's adapter and the one
place an execution's outcome (error, pause) is decided for all of them; the readers of each emitter's own
content shapes live beside it (`_shapes`, `_langfuse`, `_mlflow`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from collector.model.domain import HANDOFF, NO_ARGUMENTS, STATUS_ERROR, Span, ToolExecution
from collector.recognise import _langfuse, _mlflow, _openai_agents_js
from collector.recognise._adapted import Content as _Content
from collector.recognise._content import (
    parse_arguments,
    parse_result,
    unwrap_bound_call,
    unwrap_traceloop,
)
from collector.recognise._langchain_messages import tool_message, unwrap_tool_message, without_js_stack
from collector.recognise._logfire import TEMPLATE as LOGFIRE_TEMPLATE
from collector.recognise._logfire import logfire_function
from collector.recognise._openlit import model_call_id, tool_message_content
from collector.recognise._shapes import (
    ADK_NOT_SPECIFIED,
    ADK_OPENINFERENCE_SCOPE,
    ADK_SCOPE,
    BOUND_CALL_SCOPES,
    DETAILS_EVENT,
    HANDOFF_PREFIX,
    LANGCHAIN_OPENINFERENCE_SCOPE,
    LANGCHAIN_OPENLLMETRY_SCOPE,
    MCP_OPENLLMETRY_SCOPE,
    STRANDS_REDACTED,
    STRANDS_SCOPE,
    adk_function_response,
    adk_result,
    haystack_error,
    langchain_callback_input,
    langchain_callback_output,
    llama_index_result,
    mcp_openllmetry_input,
    mcp_openllmetry_output,
    openai_agents_handoff_tool,
    strands_content,
    strands_response,
    strands_result,
    strands_unredacted,
    without_llama_index_context,
)
from collector.recognise.declared import active as declared_conventions
from collector.recognise.declared._found import DeclaredContent

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


def _genai(span: Span) -> _Content | None:
    attrs = span.attributes
    if attrs.get("gen_ai.operation.name") != "execute_tool" and span.name != "running tool":
        return None
    name = _text(attrs, "gen_ai.tool.name")
    if name is None and span.name.startswith("execute_tool "):
        name = span.name.removeprefix("execute_tool ")
    call_id = _text(attrs, "gen_ai.tool.call.id")
    if call_id == ADK_NOT_SPECIFIED:  # ADK's placeholder
        call_id = None
    scope = span.resource.scope_name
    call_id = model_call_id(call_id, scope)  # OpenLIT's LangChain run id on a tool that raised
    adk = scope == ADK_SCOPE
    if "gen_ai.tool.call.arguments" in attrs:
        convention, args_value = "gen_ai", attrs["gen_ai.tool.call.arguments"]
        result = attrs.get("gen_ai.tool.call.result")
        if adk:
            result = adk_result(result)
        elif scope == STRANDS_SCOPE:
            if result is None:  # not written for an errored call; the output messages keep its answer
                result = strands_response(span)
            args_value, result = strands_unredacted(args_value), strands_result(result)
    elif "gcp.vertex.agent.tool_call_args" in attrs or adk:
        args_value, result = (
            attrs.get("gcp.vertex.agent.tool_call_args"),
            attrs.get("gcp.vertex.agent.tool_response"),
        )
        if args_value == "{}" and result == "{}":
            # ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false writes `{}` for both: nothing was captured (with
            # content on, a response is never `{}`: ADK wraps every return value in `{"result": …}`).
            args_value, result = None, None
        convention, result = "adk", adk_result(result)
    elif attrs.get("openinference.span.kind") == "TOOL":
        # ADK's own `execute_tool` attributes written inside OpenInference's TOOL span (its google-adk
        # instrumentation runs ADK's tracer within its own span): OpenInference's keys hold the content.
        return None
    elif "tool_arguments" in attrs or span.name == "running tool":
        convention, args_value = "pydantic_ai_v2", attrs.get("tool_arguments")
        result = attrs.get("tool_response")
    elif any(e.name in _STRANDS_EVENTS for e in span.events):
        arguments, result, event_call_id = strands_content(span)
        if arguments.raw == STRANDS_REDACTED:
            arguments = NO_ARGUMENTS
        result = strands_result(result)
        return _Content("strands", name or "", arguments, result, call_id or event_call_id)
    else:
        convention, args_value, result = "gen_ai", None, attrs.get("gen_ai.tool.call.result")
    result = tool_message_content(result)  # `str()` of a LangChain ToolMessage (OpenLIT)
    return _Content(convention, name or "", parse_arguments(args_value), parse_result(result), call_id)


_STRANDS_EVENTS = frozenset({DETAILS_EVENT, "gen_ai.tool.message", "gen_ai.choice"})


# The mcp SDK's own spans (mcp 2.3, `shared/jsonrpc_dispatcher.py` on the client, `server/_otel.py` on the
# server): `MCP send tools/call NAME` (CLIENT, no tool name attribute) above `tools/call NAME` (SERVER).
_MCP_CLIENT_PREFIX = "MCP send tools/call "
_SPAN_KIND_CLIENT = 3


def _mcp(span: Span) -> _Content | None:
    attrs = span.attributes
    if attrs.get("mcp.method.name") != "tools/call":
        return None
    name = _text(attrs, "gen_ai.tool.name")
    if name is None and span.name.startswith("tools/call "):
        name = span.name.removeprefix("tools/call ")
    if name is None and span.kind == _SPAN_KIND_CLIENT and span.name.startswith(_MCP_CLIENT_PREFIX):
        # The client's side of the call: kept where no server span is below it (collector/store/_resolve.py
        # keeps the server's, which knows how the tool ended).
        name = span.name.removeprefix(_MCP_CLIENT_PREFIX)
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


_DSPY_SCOPE = "openinference.instrumentation.dspy"
_SMOLAGENTS_SCOPE = "openinference.instrumentation.smolagents"
_LLAMA_INDEX_SCOPE = "openinference.instrumentation.llama_index"
# OpenInference's TraceConfig(hide_inputs=True) writes this instead of the input: nothing was captured.
_REDACTED = "__REDACTED__"


def _openinference(span: Span) -> _Content | None:
    attrs = span.attributes
    scope = span.resource.scope_name
    kind = attrs.get("openinference.span.kind")
    # OpenInference's LangChain instrumentation (0.1.80, `_tracer.py`) gives the kind AGENT to any run whose
    # name holds `agent`, tools too (`weather_agent`, an agent called as a tool): `tool.name` says it is one.
    langchain_tool = kind == "AGENT" and scope == LANGCHAIN_OPENINFERENCE_SCOPE and "tool.name" in attrs
    if kind != "TOOL" and not langchain_tool:
        return None
    handoff = span.name.startswith(HANDOFF_PREFIX) and (
        (scope == _OPENAI_AGENTS_SCOPE and "tool.name" not in attrs) or _openai_agents_js.handoff_target(span)
    )
    if handoff:
        # The model's call is `transfer_to_…`: stored under that name, its request joins it and gives it
        # its arguments and call id; `kind` lets specs not see it unless they name it.
        target = span.name.removeprefix(HANDOFF_PREFIX)
        return _Content(
            "openinference",
            openai_agents_handoff_tool(target),
            NO_ARGUMENTS,
            parse_result(attrs.get("output.value")),
            None,
            HANDOFF,
        )
    # `tool.parameters` is the tool's JSON Schema in OpenInference's conventions, never a call's arguments.
    raw_args = attrs.get("input.value")
    arguments = NO_ARGUMENTS if raw_args == _REDACTED else parse_arguments(raw_args)
    if scope in BOUND_CALL_SCOPES:
        arguments = unwrap_bound_call(
            arguments, BOUND_CALL_SCOPES[scope], lone_dict_is_kwargs=scope == _SMOLAGENTS_SCOPE
        )
    name = _text(attrs, "tool.name")
    if name is None and scope == _DSPY_SCOPE:  # DSPy names the span after the method: `get_weather.__call__`
        name = span.name.removesuffix(".__call__").removesuffix(".acall")
    result = attrs.get("output.value")
    if scope == _LLAMA_INDEX_SCOPE:
        arguments = without_llama_index_context(arguments)
        result = llama_index_result(result)
    elif scope == ADK_OPENINFERENCE_SCOPE:
        result = adk_result(adk_function_response(result))
    # LangChain's ToolMessage, whichever instrumentation wrote it.
    result, call_id = unwrap_tool_message(result, _text(attrs, "tool.id", "tool_call.id"))
    return _Content("openinference", name or span.name, arguments, parse_result(result), call_id)


def _traceloop(span: Span) -> _Content | None:
    attrs = span.attributes
    if attrs.get("traceloop.span.kind") != "tool":
        return None
    name = _text(attrs, "traceloop.entity.name", "gen_ai.tool.name") or span.name.removesuffix(".tool")
    raw_args = _first_present(attrs, "traceloop.entity.input", "gen_ai.tool.call.arguments")
    result = _first_present(attrs, "traceloop.entity.output", "gen_ai.tool.call.result")
    arguments = unwrap_traceloop(parse_arguments(raw_args))
    call_id = _text(attrs, "gen_ai.tool.call.id")
    scope = span.resource.scope_name
    if scope == LANGCHAIN_OPENLLMETRY_SCOPE:
        arguments, wrapped_call_id = langchain_callback_input(arguments)
        call_id = call_id or wrapped_call_id
    elif scope == MCP_OPENLLMETRY_SCOPE:
        arguments, result = mcp_openllmetry_input(arguments), mcp_openllmetry_output(result)
    if tool_message(result) is not None:  # LangChain's ToolMessage, whichever instrumentation wrote it
        result, call_id = unwrap_tool_message(result, call_id)
    elif scope == LANGCHAIN_OPENLLMETRY_SCOPE:
        result = langchain_callback_output(result)
    return _Content("traceloop", name, arguments, parse_result(result), call_id)


# The Vercel AI SDK's own telemetry (`ai` 6.0.333 `generate-text/execute-tool-call.ts`; `@ai-sdk/otel`
# 1.0.173 `LegacyOpenTelemetry`): an `ai.toolCall` span per call, with the tool's name and call id, its
# validated input as JSON text and its JSON result (issue #16, item 12).
def _vercel_ai(span: Span) -> _Content | None:
    attrs = span.attributes
    if attrs.get("ai.operationId") != "ai.toolCall" or "ai.toolCall.name" not in attrs:
        return None
    return _Content(
        "vercel_ai",
        str(attrs["ai.toolCall.name"]),
        parse_arguments(attrs.get("ai.toolCall.args")),
        parse_result(attrs.get("ai.toolCall.result")),
        _text(attrs, "ai.toolCall.id"),
    )


# Haystack 3's own tracing: one `haystack.agent.step.tool` span per call, with the tool's name, its
# arguments as JSON text and its output; no call id (the request joined to it gives one).
_HAYSTACK_TOOL_SPAN = "haystack.agent.step.tool"


def _haystack(span: Span) -> _Content | None:
    attrs = span.attributes
    if span.name != _HAYSTACK_TOOL_SPAN or "haystack.tool.name" not in attrs:
        return None
    output = (
        None if attrs.get("haystack.tool.error") is True else attrs.get("haystack.agent.step.tool.output")
    )
    return _Content(
        "haystack",
        str(attrs["haystack.tool.name"]),
        parse_arguments(attrs.get("haystack.agent.step.tool.input")),
        parse_result(output),
        None,
    )


def _observability_sdk(span: Span) -> _Content | None:
    """The Langfuse SDK's and MLflow Tracing's own tool spans (`_langfuse`, `_mlflow`)."""
    for convention, read in (("langfuse", _langfuse.langfuse_tool), ("mlflow", _mlflow.mlflow_tool)):
        if (content := read(span)) is not None:
            return _Content(convention, *content)
    return None


# Priority order: MCP before GenAI because MCP spans may also carry gen_ai.operation.name=execute_tool
# but name their call id differently; Traceloop before GenAI because its openai-agents spans carry both.
ADAPTERS: tuple[Callable[[Span], _Content | None], ...] = (
    _mcp,
    _traceloop,
    _genai,
    _openinference,
    _vercel_ai,
    _haystack,
    _observability_sdk,
    logfire_function,
)


def _exception_event(span: Span) -> dict[str, Any] | None:
    for event in span.events:
        if event.name == "exception":
            return event.attributes
    return None


_DISCRIMINATORS = frozenset(
    {
        "gen_ai.operation.name",
        "openinference.span.kind",
        "traceloop.span.kind",
        "mcp.method.name",
        "ai.operationId",
        "haystack.tool.name",
        _langfuse.TYPE,
        _mlflow.SPAN_TYPE,
        LOGFIRE_TEMPLATE,
    }
)


def _clean_error(status_message: str, exception_message: str | None) -> str | None:
    """The status description (the SDK's `Type: message`), unless it runs over several lines: OpenInference
    writes the exception's repr followed by the whole traceback there, where the `exception` event keeps
    the exception's own message."""
    if "\n" in status_message and exception_message:
        return exception_message
    return status_message or exception_message


def recognise_execution(span: Span) -> ToolExecution | None:
    """The tool execution this span records, or None when no convention claims it."""
    # A user's declared conventions first (docs/conventions.md, "Your own conventions", says why).
    declared = declared_conventions.current()
    content: _Content | DeclaredContent | None = declared.read(span) if declared is not None else None
    if content is None:
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
    # LangGraph's interrupt as Langfuse's and MLflow's LangChain integrations record it (MLflow's: ERROR).
    sdk_interrupt = _langfuse.interrupted(content.convention, attrs) or _mlflow.interrupted(
        content.convention, exception_type
    )
    deferral = _text(attrs, "pydantic_ai.tool.deferral.name")
    if attrs.get("tracescore.tool.paused") is True or content.paused:
        paused = True
        reason = _text(attrs, "tracescore.tool.pause_reason")
        pause_reason = reason if reason in PAUSE_REASONS else None
    elif deferral is not None:
        paused, pause_reason = True, _PYDANTIC_DEFERRALS.get(deferral)
    elif content.tool_name in _ADK_PAUSE_CALLS:
        paused, pause_reason = True, _ADK_PAUSE_CALLS[content.tool_name]
    elif sdk_interrupt or (
        exception_type and exception_type.endswith("GraphInterrupt") and span.status_code != STATUS_ERROR
    ):
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
        or attrs.get("haystack.tool.error") is True
        or _langfuse.failed(attrs)
        or content.error
    )
    if paused and (deferral is not None or sdk_interrupt):
        # pydantic-ai < v5 records the deferral as an exception with status ERROR: it is the pause mechanism,
        # not a failure of the tool.
        error, error_type = False, None
    error_message = None
    if error:
        error_message = content.error_message or _clean_error(
            span.status_message, _text(exception, "exception.message") if exception else None
        )
        if error_message is None and failure_stage is not None:
            error_message = _text(attrs, "logfire.msg")
        if error_message is None and content.convention == "langfuse":
            error_message = _text(attrs, _langfuse.STATUS_MESSAGE)
        if error_message is None and content.convention == "haystack":
            error_message = haystack_error(attrs.get("haystack.agent.step.tool.output"))
        error_message = error_message or content.error_message
        if error_message is not None:
            error_message = without_js_stack(error_message)
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
        kind=content.kind,
    )

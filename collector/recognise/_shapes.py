"""What instrumentations wrap around a tool call's arguments and result, taken off again.

One function per shape, each naming the instrumentation (package and version) that writes it: the
adapters of collector/recognise/conventions.py call these for the scopes they belong to, so a shape is
only ever unwrapped where it was seen (issue #16: "results as the tool returned them").
"""

from __future__ import annotations

import re
from typing import Any

from collector.model.domain import NO_ARGUMENTS, Arguments, Span
from collector.recognise._content import load_json_text, parse_arguments, parse_result

DETAILS_EVENT = "gen_ai.client.inference.operation.details"


def parts(message: Any) -> list[dict[str, Any]]:
    if isinstance(message, dict) and isinstance(message.get("parts"), list):
        return [p for p in message["parts"] if isinstance(p, dict)]
    return []


# Strands Agents (strands-agents 1.62, `telemetry/tracer.py`): a tool's result is its ToolResult content,
# a list of blocks (`[{"text": …}]`, `[{"json": …}]`: `tools/decorator.py` wraps return values so), and
# `gen_ai_unredacted_attributes` being off writes this token in place of content.
STRANDS_SCOPE = "strands.telemetry.tracer"
STRANDS_REDACTED = "[REDACTED]"


def strands_result(value: Any) -> Any:
    """The tool's return value out of Strands' one-block content list; anything else as it is."""
    if value == STRANDS_REDACTED:
        return None
    blocks = load_json_text(value)
    if isinstance(blocks, list) and len(blocks) == 1 and isinstance(blocks[0], dict) and len(blocks[0]) == 1:
        ((kind, inner),) = blocks[0].items()
        if kind in ("text", "json"):
            return inner
    return value


def strands_unredacted(value: Any) -> Any:
    return None if value == STRANDS_REDACTED else value


def strands_response(span: Span) -> Any:
    """An errored call's answer, which the latest mode keeps only in the output messages (the span's
    `gen_ai.output.messages`, or the details event's) as a `tool_call_response` part."""
    sources = [span.attributes.get("gen_ai.output.messages")]
    sources += [e.attributes.get("gen_ai.output.messages") for e in span.events if e.name == DETAILS_EVENT]
    for source in sources:
        for message in load_json_text(source) or []:
            for part in parts(message):
                if part.get("type") == "tool_call_response":
                    return part.get("response", part.get("result"))
    return None


ADK_SCOPE = "gcp.vertex.agent"
ADK_OPENINFERENCE_SCOPE = "openinference.instrumentation.google_adk"
ADK_NOT_SPECIFIED = "<not specified>"


def adk_result(value: Any) -> Any:
    """ADK wraps a tool's return value that is not a dict as `{"result": value}`
    (google-adk 2.13, `flows/llm_flows/tools/_caller.py`), and writes `{"result": "<not specified>"}` for
    a tool that raised: the tool returned `value`, or nothing."""
    loaded = load_json_text(value)
    if isinstance(loaded, dict) and set(loaded) == {"result"}:
        inner = loaded["result"]
        return None if inner == ADK_NOT_SPECIFIED else inner
    return value


# LlamaIndex's `ToolOutput` as its instrumentation dumps it; the tool's own return value is `raw_output`.
_LLAMA_INDEX_OUTPUT_KEYS = frozenset({"raw_output", "raw_input", "tool_name", "is_error"})


def llama_index_result(value: Any) -> Any:
    loaded = load_json_text(value)
    if isinstance(loaded, dict) and set(loaded) >= _LLAMA_INDEX_OUTPUT_KEYS:
        return loaded["raw_output"]
    return value


# LlamaIndex's AgentWorkflow hands a tool that asks for it the workflow's `Context` (llama-index-core 0.14,
# `AgentWorkflow.call_tool`: `tool.acall(ctx=ctx, **tool_kwargs)`, e.g. its own `handoff` tool), and the
# instrumentation records the object's repr among the arguments: not an argument the model gave.
_LLAMA_INDEX_CONTEXT = re.compile(r"<workflows\.context\.[\w.]*Context object at 0x[0-9a-f]+>")


def without_llama_index_context(arguments: Arguments) -> Arguments:
    value = arguments.value
    if not isinstance(value, dict):
        return arguments
    kept = {k: v for k, v in value.items() if not (isinstance(v, str) and _LLAMA_INDEX_CONTEXT.fullmatch(v))}
    if len(kept) == len(value):
        return arguments
    return Arguments(value=kept, raw=arguments.raw, raw_is_value=False)


def adk_function_response(value: Any) -> Any:
    """OpenInference's google-adk instrumentation (1.0.5) records the whole FunctionResponse,
    `{"id", "name", "response"}`, as the tool's output; the tool's answer is `response`."""
    loaded = load_json_text(value)
    if isinstance(loaded, dict) and set(loaded) == {"id", "name", "response"}:
        return loaded["response"]
    return value


# OpenInference's LangChain instrumentation (0.1.80) names its tool spans AGENT at times (see
# conventions.py); its ToolMessage results are read by their shape (`_langchain_messages.py`).
LANGCHAIN_OPENINFERENCE_SCOPE = "openinference.instrumentation.langchain"


# OpenLLMetry's LangChain callback (opentelemetry-instrumentation-langchain 0.62.4,
# `callback_handler.on_tool_start` / `on_tool_end`) records LangChain's callback arguments as the tool's
# input, `{"input_str", "tags", "metadata", "inputs", "kwargs"}`, where `inputs` holds the call's
# arguments and `kwargs.tool_call_id` its call id; and the output as `{"output": <ToolMessage>, "kwargs"}`,
# the ToolMessage serialised by LangChain (read by its shape, `_langchain_messages.tool_message`), or
# `{"output": <anything else>, "kwargs"}`. Issue #16, item 3.
LANGCHAIN_OPENLLMETRY_SCOPE = "opentelemetry.instrumentation.langchain"
_CALLBACK_INPUT_KEYS = frozenset({"input_str", "tags", "metadata", "inputs", "kwargs"})


def langchain_callback_input(arguments: Arguments) -> tuple[Arguments, str | None]:
    """The call's arguments and call id out of the callback record; the record itself when it is none.

    A tool whose input was a bare string has no `inputs`: its text is kept as a value that is not an
    object, so the arguments of the request joined to it are stored instead (`arguments_source`)."""
    value = arguments.value
    if not (isinstance(value, dict) and "input_str" in value and set(value) <= _CALLBACK_INPUT_KEYS):
        return arguments, None
    extra = value.get("kwargs")
    call_id = extra.get("tool_call_id") if isinstance(extra, dict) else None
    inputs = value.get("inputs")
    kept = inputs if isinstance(inputs, dict) else value.get("input_str")
    unwrapped = Arguments(value=kept, raw=arguments.raw, raw_is_value=False)
    return unwrapped, call_id if isinstance(call_id, str) else None


def langchain_callback_output(value: Any) -> Any:
    """The run's output out of the callback record; a ToolMessage in it is read before this is asked."""
    loaded = load_json_text(value)
    if not (isinstance(loaded, dict) and set(loaded) == {"output", "kwargs"}):
        return value
    return loaded["output"]


# OpenLLMetry's MCP instrumentation (opentelemetry-instrumentation-mcp 0.62.4, `instrumentation.py`
# `_extract_clean_input` / `_extract_clean_output`): `{"tool_name", "arguments"}` in, `{"result",
# "is_error"}` out.
MCP_OPENLLMETRY_SCOPE = "opentelemetry.instrumentation.mcp.instrumentation"


def mcp_openllmetry_input(arguments: Arguments) -> Arguments:
    value = arguments.value
    if isinstance(value, dict) and "arguments" in value and set(value) <= {"tool_name", "arguments"}:
        return Arguments(value=value["arguments"], raw=arguments.raw, raw_is_value=False)
    return arguments


def mcp_openllmetry_output(value: Any) -> Any:
    loaded = load_json_text(value)
    if isinstance(loaded, dict) and "result" in loaded and set(loaded) <= {"result", "is_error"}:
        return loaded["result"]
    return value


# Haystack 3's own tracing (haystack-ai 3.4.1 `components/agents/tool_calling.py`, exported through
# opentelemetry-haystack 2.0): a tool that raised has `haystack.tool.error` and, as its output,
# `{"error": "Failed to invoke Tool `NAME` with parameters {...}. Error: MESSAGE"}` (`tools/tool.py`).
_HAYSTACK_FAILURE = re.compile(
    r"^Failed to invoke Tool `[^`]*` with parameters .*?\. Error: (?P<message>.*)$", re.S
)


def haystack_error(output: Any) -> str | None:
    """The exception's own message out of a failed Haystack tool's output."""
    loaded = load_json_text(output)
    text = loaded.get("error") if isinstance(loaded, dict) else None
    if not isinstance(text, str):
        return None
    return haystack_failure_message(text)


def haystack_failure_message(text: str) -> str:
    """The exception's own message out of Haystack's notice of a failed tool (Haystack 2's ToolInvoker
    writes the same notice as a failed call's result); other text is the message as it is."""
    match = _HAYSTACK_FAILURE.match(text)
    return match.group("message") if match else text


def strands_content(span: Span) -> tuple[Arguments, Any, str | None]:
    """Strands puts tool content in span events, in its latest or its legacy shape."""
    arguments, result, call_id = NO_ARGUMENTS, None, None
    for event in span.events:
        attrs = event.attributes
        if event.name == DETAILS_EVENT:
            for message in load_json_text(attrs.get("gen_ai.input.messages")) or []:
                for part in parts(message):
                    if part.get("type") == "tool_call":
                        arguments = parse_arguments(part.get("arguments"))
                        call_id = call_id or _maybe_str(part.get("id"))
            for message in load_json_text(attrs.get("gen_ai.output.messages")) or []:
                for part in parts(message):
                    if part.get("type") == "tool_call_response":
                        result = part.get("response", part.get("result"))
        elif event.name == "gen_ai.tool.message":
            arguments = parse_arguments(attrs.get("content"))
            call_id = call_id or _maybe_str(attrs.get("id"))
        elif event.name == "gen_ai.choice":
            result = parse_result(attrs.get("message"))
    return arguments, result, call_id


def _maybe_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


# The OpenAI Agents SDK through OpenInference's processor: a handoff's span is `handoff to {agent}`.
HANDOFF_PREFIX = "handoff to "


def openai_agents_handoff_tool(agent: str) -> str:
    """The tool the model calls to hand off to `agent`: the SDK's `Handoff.default_tool_name`
    (openai-agents 0.24, `transform_string_function_style(f"transfer_to_{agent.name}")`: every character
    but ASCII letters, digits and `_` becomes `_`, then lowercase). A handoff given its own
    `tool_name_override` is stored under this default name all the same: the span does not carry it."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", f"transfer_to_{agent}").lower()


# OpenInference instrumentations that record a tool's bound Python call as its `input.value`, not the
# arguments the model gave, with the keys the wrapper adds around them (issue #16, items 5, 10, 11):
# smolagents (openinference-instrumentation-smolagents 0.1.43, `_wrappers._get_input_value` binds
# `Tool.__call__(self, *args, sanitize_inputs_outputs=False, **kwargs)`), LlamaIndex (-llama-index
# 4.6.1, `_handler._Span.process_input` binds `FunctionTool.acall(**kwargs)`) and DSPy (-dspy 0.1.48,
# `_bind_arguments` on `Tool.__call__(**kwargs)`).
BOUND_CALL_SCOPES = {
    "openinference.instrumentation.smolagents": frozenset({"args", "kwargs", "sanitize_inputs_outputs"}),
    "openinference.instrumentation.llama_index": frozenset({"args", "kwargs"}),
    "openinference.instrumentation.dspy": frozenset({"args", "kwargs"}),
}

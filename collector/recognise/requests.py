"""Request-side evidence: the tool calls a model asked for, read off chat/LLM spans.

Three encodings (DESIGN §3): OTel GenAI `gen_ai.output.messages` parts of type `tool_call`; OpenInference
flattened `llm.output_messages.<i>.message.tool_calls.<j>.tool_call.*`; old OpenLLMetry flattened
`gen_ai.completion.<i>.tool_calls.<j>.*`. And Google ADK's own (`adk`), the model's response recorded
whole on its `call_llm` span; Strands' default mode (`strands`), the answer's content blocks; and
CrewAI's through OpenInference's event listener (`crewai`), the LLM span's output; and the Vercel AI
SDK's legacy telemetry (`vercel_ai`); and LangChain's serialised AIMessage in an OpenInference LLM
span's `output.value` where no call is flattened (`langchain`, OpenInference's LangChain.js); and
Mastra's model steps (`mastra`, `_mastra.py`).

A fourth, only when a span has none of those: calls the model wrote as a fenced JSON block in its own
output text (providers and prompts without native tool calling do this), stored with encoding
`text_json`. The parser is deliberately narrow so prose is never read as a call: see `_text_call`.
And DSPy's, whose chat adapter has the model write its ReAct step as marked fields
(`[[ ## next_tool_name ## ]]`, `[[ ## next_tool_args ## ]]`), stored with encoding `dspy_chat`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from collector.model.domain import Span, ToolRequest
from collector.recognise._content import load_json_text, parse_arguments
from collector.recognise._langchain_messages import llm_tool_calls
from collector.recognise._langfuse import langfuse_requests
from collector.recognise._logfire import TEMPLATE as LOGFIRE_TEMPLATE
from collector.recognise._logfire import requested_calls as logfire_calls
from collector.recognise._mastra import step_tool_calls
from collector.recognise._mlflow import mlflow_requests

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


# Google ADK's schema v1 (google-adk 2.13 with ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1) records the model's
# whole response on its `call_llm` span (`telemetry/tracing.py`, `trace_call_llm`): LlmResponse as JSON,
# with the requested calls as `content.parts[].function_call` `{id, name, args}` (issue #16, item 7).
_ADK_RESPONSE = "gcp.vertex.agent.llm_response"


def _adk_calls(value: Any) -> list[dict[str, Any]]:
    response = load_json_text(value)
    content = response.get("content") if isinstance(response, dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    calls = []
    for part in parts if isinstance(parts, list) else []:
        call = part.get("function_call") if isinstance(part, dict) else None
        if isinstance(call, dict):
            calls.append({"name": call.get("name"), "arguments": call.get("args"), "id": call.get("id")})
    return calls


# Strands Agents' default telemetry (strands-agents 1.62, `tracer.end_model_invoke_span`) puts the
# model's answer on its `chat` span as a `gen_ai.choice` event whose `message` is the Bedrock-style
# content list: a tool call is `{"toolUse": {"toolUseId", "name", "input"}}` (issue #16, item 7). Only
# `chat` spans: the event loop cycle's own `gen_ai.choice` repeats the same calls.
def _strands_calls(span: Span) -> list[dict[str, Any]]:
    calls = []
    for event in span.events:
        if event.name != "gen_ai.choice":
            continue
        content = load_json_text(event.attributes.get("message"))
        for block in content if isinstance(content, list) else []:
            use = block.get("toolUse") if isinstance(block, dict) else None
            if isinstance(use, dict):
                calls.append(
                    {"name": use.get("name"), "arguments": use.get("input"), "id": use.get("toolUseId")}
                )
    return calls


# OpenInference's CrewAI event listener (openinference-instrumentation-crewai 1.1.21, `_event_assembler`)
# writes no `llm.output_messages` for a turn that calls tools: the calls are only the LLM span's
# `output.value`, the list CrewAI got from the model (OpenAI's `{id, function: {name, arguments}}`, or the
# `{name, input|arguments, id|call_id|toolUseId}` of other providers, as CrewAI's own
# `extract_tool_call_info` reads them). Every item must be a call.
_CREWAI_SCOPE = "openinference.instrumentation.crewai"


def _crewai_call(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return {"name": function["name"], "arguments": function.get("arguments"), "id": item.get("id")}
    if isinstance(item.get("name"), str) and ("input" in item or "arguments" in item):
        call_id = item.get("id", item.get("call_id", item.get("toolUseId")))
        return {"name": item["name"], "arguments": item.get("input", item.get("arguments")), "id": call_id}
    return None


def _crewai_calls(value: Any) -> list[dict[str, Any]]:
    items = load_json_text(value)
    if not isinstance(items, list) or not items:
        return []
    calls = [_crewai_call(item) for item in items]
    return [c for c in calls if c] if all(calls) else []


# The Vercel AI SDK's legacy telemetry puts each model call's requests on its `*.doGenerate` span as
# `ai.response.toolCalls`, `[{toolCallId, toolName, input}]`, with `input` the provider's JSON text (ai 6)
# or already an object (ai 7's LegacyOpenTelemetry). The `ai.generateText` span above repeats the last
# step's (ai 6) or every step's (ai 7) calls, and is not read.
def _vercel_ai_calls(value: Any) -> list[dict[str, Any]]:
    calls = load_json_text(value)
    return [
        {"name": c.get("toolName"), "arguments": c.get("input"), "id": c.get("toolCallId")}
        for c in (calls if isinstance(calls, list) else [])
        if isinstance(c, dict) and isinstance(c.get("toolName"), str)
    ]


# Haystack 3's own tracing puts each model call's replies on its `haystack.agent.step.llm` span as JSON,
# `{"replies": [{"role": "assistant", "content": [{"tool_call": {tool_name, arguments, id}}, …]}]}`.
_HAYSTACK_LLM_SPAN = "haystack.agent.step.llm"
# Haystack 2's tracing (haystack-ai 2.31.0 `core/pipeline/base.py`, content tracing on) records each
# component run, a chat generator's too, as `haystack.component.run` with its output as JSON in
# `haystack.component.output`: a chat generator's has the same `replies`.
_HAYSTACK_COMPONENT_SPAN = "haystack.component.run"
_HAYSTACK_COMPONENT_OUTPUT = "haystack.component.output"


def _haystack_calls(value: Any) -> list[dict[str, Any]]:
    output = load_json_text(value)
    replies = output.get("replies") if isinstance(output, dict) else None
    calls = []
    for reply in replies if isinstance(replies, list) else []:
        content = reply.get("content") if isinstance(reply, dict) else None
        for block in content if isinstance(content, list) else []:
            call = block.get("tool_call") if isinstance(block, dict) else None
            if isinstance(call, dict) and isinstance(call.get("tool_name"), str):
                calls.append(
                    {"name": call["tool_name"], "arguments": call.get("arguments"), "id": call.get("id")}
                )
    return calls


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


# DSPy's ChatAdapter (dspy 3.4, `adapters/chat_adapter.py`) writes each output field after a marker
# `[[ ## name ## ]]`; ReAct's fields (`predict/react.py`) name the next tool and its JSON arguments. A
# real model usually closes with `[[ ## completed ## ]]`.
_DSPY_CALL = re.compile(
    r"\[\[ ## next_tool_name ## \]\]\s*\n(?P<name>.*?)\s*\n\s*\[\[ ## next_tool_args ## \]\]\s*\n"
    r"(?P<arguments>.*?)\s*(?=\[\[ ## |\Z)",
    re.DOTALL,
)
_DSPY_MARKER = "[[ ## next_tool_name ## ]]"


def dspy_calls(text: str) -> list[dict[str, Any]]:
    """The tool call of a DSPy ReAct step written in the chat adapter's fields, if the text is one."""
    if _DSPY_MARKER not in text:
        return []
    calls = []
    for match in _DSPY_CALL.finditer(text):
        name = match.group("name").strip()
        if _TOOL_NAME.match(name):
            calls.append({"name": name, "arguments": match.group("arguments").strip(), "id": None})
    return calls


# What a text must hold to be worth parsing for calls.
_MAY_HOLD_CALLS = ("```", _DSPY_MARKER)

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
        if not key.startswith(prefixes) or not isinstance(value, str):
            continue
        if not any(marker in value for marker in _MAY_HOLD_CALLS):
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
    if attrs.get("gen_ai.operation.name") == "invoke_agent":
        # An agent span's output messages are the agent's output, not a model's request: the Vercel AI
        # SDK's GenAI integration lists every call of the run there (issue #16, item 12), which the
        # `chat` spans below it have already asked for, each in its own turn.
        return []
    for encoding, reader in (("langfuse", langfuse_requests), ("mlflow", mlflow_requests)):
        sdk_calls = reader(span)
        if sdk_calls is not None:
            return [_request(span, position, call, encoding) for position, call in enumerate(sdk_calls)]
    if span.name == _HAYSTACK_LLM_SPAN:
        haystack = _haystack_calls(attrs.get("haystack.agent.step.llm.output"))
        return [_request(span, position, call, "haystack") for position, call in enumerate(haystack)]
    if span.name == _HAYSTACK_COMPONENT_SPAN and _HAYSTACK_COMPONENT_OUTPUT in attrs:
        haystack = _haystack_calls(attrs[_HAYSTACK_COMPONENT_OUTPUT])
        return [_request(span, position, call, "haystack") for position, call in enumerate(haystack)]
    mastra = step_tool_calls(attrs)
    if mastra is not None:
        return [_request(span, position, call, "mastra") for position, call in enumerate(mastra)]
    operation = attrs.get("ai.operationId")
    if isinstance(operation, str) and operation.endswith((".doGenerate", ".doStream")):
        vercel = _vercel_ai_calls(attrs.get("ai.response.toolCalls"))
        return [_request(span, position, call, "vercel_ai") for position, call in enumerate(vercel)]
    messages = _output_messages(attrs.get("gen_ai.output.messages"))
    if "gen_ai.output.messages" not in attrs:
        # Only when the span attribute is absent: an emitter that sets both would count every call twice.
        for event in span.events:
            if event.name == _DETAILS_EVENT:
                messages.extend(_output_messages(event.attributes.get("gen_ai.output.messages")))
    calls = _output_tool_calls(messages)
    if calls:
        return [_request(span, position, call, "gen_ai") for position, (call, _) in enumerate(calls)]
    if _ADK_RESPONSE in attrs:
        adk = _adk_calls(attrs[_ADK_RESPONSE])
        return [_request(span, position, call, "adk") for position, call in enumerate(adk)]
    if span.resource.scope_name.startswith(_CREWAI_SCOPE) and attrs.get("openinference.span.kind") == "LLM":
        crewai = _crewai_calls(attrs.get("output.value"))
        if crewai:
            return [_request(span, position, call, "crewai") for position, call in enumerate(crewai)]
    if attrs.get("gen_ai.operation.name") == "chat" and span.events:
        strands = _strands_calls(span)
        if strands:
            return [_request(span, position, call, "strands") for position, call in enumerate(strands)]
    if LOGFIRE_TEMPLATE in attrs:  # Pydantic Logfire's own shapes (collector/recognise/_logfire.py)
        logfire = logfire_calls(span)
        if logfire:
            return [_request(span, position, call, "logfire") for position, call in enumerate(logfire)]
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
        if not calls and attrs.get("openinference.span.kind") == "LLM":
            # OpenInference's LangChain.js instrumentation flattens no tool calls: they are only in the
            # serialised AIMessage of the LLM span's `output.value` (`_langchain_messages.py`).
            calls.extend((call, "langchain") for call in llm_tool_calls(attrs.get("output.value")))
    if not calls and openllmetry:
        for _, call in sorted(_flattened(span, _OPENLLMETRY, "gen_ai.completion.").items()):
            calls.append((call, "openllmetry"))
    if not calls and (messages or openinference or openllmetry):
        # The fallback, never beside native calls (the same call would count twice).
        prefixes = ("llm.output_messages.",) * openinference + ("gen_ai.completion.",) * openllmetry
        for text in _output_texts(span, messages, prefixes):
            calls.extend((call, "text_json") for call in text_calls(text))
            calls.extend((call, "dspy_chat") for call in dspy_calls(text))
    return [_request(span, position, call, encoding) for position, (call, encoding) in enumerate(calls)]

"""End to end, one fixture per tool-execution convention (DESIGN §3-§4).

Each fixture is built with the real OpenTelemetry SDK and sent by the real OTLP exporters (gRPC or HTTP) to
a real `tracescore serve`, with exactly the span names, scope names, attributes, events and status the
emitter sets (../shared/reference/tool-span-conventions.md). The one exception is the structured `kvlist`
arguments, which the Python SDK cannot send: that request is hand-made OTLP/JSON.

One server serves the whole module: every fixture is sent, the server is stopped (which completes every
run), and each test then reads the rows of its own spans, found by the label the fixture gave them.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from tests._otel import exporter, provider
from tests._server import ServeProcess

EXECUTION_COLUMNS = (
    "tool_name",
    "arguments",
    "arguments_raw",
    "arguments_error",
    "result",
    "call_id",
    "call_id_source",
    "error",
    "error_type",
    "error_message",
    "paused",
    "pause_reason",
    "from_history",
    "convention",
    "agent_path",
    "run_id",
    "task_id",
)
REQUEST_COLUMNS = ("tool_name", "call_id", "arguments", "round", "execution_span_id", "encoding", "run_id")
JSON_COLUMNS = frozenset({"arguments", "result"})


# --------------------------------------------------------------------------------------------------
# What was sent, and what was stored
# --------------------------------------------------------------------------------------------------


@dataclass
class Sent:
    """The ids of the spans the fixtures sent, under a label each fixture chooses."""

    ids: dict[str, tuple[str, str]] = field(default_factory=dict)

    def keep(self, label: str, span: Span) -> None:
        context = span.get_span_context()
        self.ids[label] = (f"{context.trace_id:032x}", f"{context.span_id:016x}")

    def trace_id(self, label: str) -> str:
        return self.ids[label][0]

    def span_id(self, label: str) -> str:
        return self.ids[label][1]


@dataclass
class Stored:
    """The rows the server stored, read once after it stopped."""

    sent: Sent
    executions: dict[str, dict[str, Any]]
    execution_traces: dict[str, int]
    requests: dict[str, list[dict[str, Any]]]
    span_names: dict[str, list[str]]

    @classmethod
    def load(cls, server: ServeProcess, sent: Sent) -> Stored:
        executions: dict[str, dict[str, Any]] = {}
        traces: dict[str, int] = {}
        for span_id, trace_id, *values in server.query(
            f"SELECT span_id, trace_id, {', '.join(EXECUTION_COLUMNS)} FROM executions"
        ):
            assert span_id not in executions, f"span {span_id} stored twice"
            executions[span_id] = _decoded(dict(zip(EXECUTION_COLUMNS, values, strict=True)))
            traces[trace_id] = traces.get(trace_id, 0) + 1
        requests: dict[str, list[dict[str, Any]]] = {}
        for trace_id, *values in server.query(
            f"SELECT trace_id, {', '.join(REQUEST_COLUMNS)} FROM tool_requests "
            "ORDER BY trace_id, round, requested_at, position"
        ):
            requests.setdefault(trace_id, []).append(
                _decoded(dict(zip(REQUEST_COLUMNS, values, strict=True)))
            )
        names: dict[str, list[str]] = {}
        for trace_id, name in server.query("SELECT trace_id, name FROM spans ORDER BY start_time"):
            names.setdefault(trace_id, []).append(name)
        return cls(sent, executions, traces, requests, names)

    def execution(self, label: str) -> dict[str, Any]:
        span_id = self.sent.span_id(label)
        assert span_id in self.executions, f"no execution stored for {label!r} (span {span_id})"
        return self.executions[span_id]

    def executions_in_trace(self, label: str) -> int:
        return self.execution_traces.get(self.sent.trace_id(label), 0)

    def requests_in_trace(self, label: str) -> list[dict[str, Any]]:
        return self.requests.get(self.sent.trace_id(label), [])


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    """JSON columns as Python values, so that a comparison does not depend on key order or spacing."""
    return {k: json.loads(v) if k in JSON_COLUMNS and v is not None else v for k, v in row.items()}


def clean_row(*, tool_name: str, convention: str, run_id: str, **columns: Any) -> dict[str, Any]:
    """The expected `executions` row: a clean, unpaused, live execution unless `columns` say otherwise."""
    row: dict[str, Any] = {
        "tool_name": tool_name,
        "arguments": None,
        "arguments_raw": None,
        "arguments_error": None,
        "result": None,
        "call_id": None,
        "call_id_source": None,
        "error": False,
        "error_type": None,
        "error_message": None,
        "paused": False,
        "pause_reason": None,
        "from_history": False,
        "convention": convention,
        "agent_path": None,
        "run_id": run_id,
        "task_id": None,
    }
    unknown = set(columns) - set(row)
    assert not unknown, f"not an executions column: {unknown}"
    row.update(columns)
    return row


def _json(value: Any) -> str:
    """JSON text the way Python emitters write it (json.dumps defaults)."""
    return json.dumps(value)


def _exception_type(name: str, module: str) -> type[Exception]:
    """An exception class as a framework defines it: the SDK records `module.qualname` as its type."""
    return type(name, (Exception,), {"__module__": module})


GraphInterrupt = _exception_type("GraphInterrupt", "langgraph.errors")
ApprovalRequired = _exception_type("ApprovalRequired", "pydantic_ai.exceptions")
ValidationError = _exception_type("ValidationError", "pydantic_core._pydantic_core")


# --------------------------------------------------------------------------------------------------
# The fixtures: one function per emitter shape
# --------------------------------------------------------------------------------------------------

Builder = Callable[[TracerProvider, Sent], None]


def pydantic_ai_agent(tracer: Tracer, name: str, run_id: str) -> AbstractContextManager[Span]:
    """pydantic-ai ≥ v3 `invoke_agent` span (instrumentation.py `wrap_run`)."""
    return tracer.start_as_current_span(
        f"invoke_agent {name}",
        attributes={
            "model_name": "gpt-4o",
            "agent_name": name,
            "gen_ai.agent.name": name,
            "gen_ai.agent.call.id": run_id,
            "gen_ai.conversation.id": f"conv-{run_id}",
            "gen_ai.operation.name": "invoke_agent",
            "logfire.msg": f"{name} run",
        },
    )


def pydantic_ai_tool_attributes(name: str, call_id: str, arguments: str | None = None) -> dict[str, Any]:
    """pydantic-ai ≥ v3 `execute_tool` attributes (`_tool_span_attributes`); arguments need content on."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "logfire.msg": f"running tool: {name}",
    }
    if arguments is not None:
        attributes["gen_ai.tool.call.arguments"] = arguments
    return attributes


def send_genai_json_arguments(tp: TracerProvider, sent: Sent) -> None:
    tracer = tp.get_tracer("pydantic-ai")
    with pydantic_ai_agent(tracer, "weather_agent", "pyd-run-7f3a") as agent:
        sent.keep("genai.agent", agent)
        attributes = pydantic_ai_tool_attributes("get_weather", "call_W1", '{"city": "Paris", "days": 3}')
        with tracer.start_as_current_span("execute_tool get_weather", attributes=attributes) as span:
            span.set_attribute("gen_ai.tool.call.result", '{"temp_c": 21, "sky": "clear"}')
            sent.keep("genai.json", span)


def send_genai_without_content(tp: TracerProvider, sent: Sent) -> None:
    tracer = tp.get_tracer("pydantic-ai")
    attributes = pydantic_ai_tool_attributes("get_weather", "call_N1")
    with tracer.start_as_current_span("execute_tool get_weather", attributes=attributes) as span:
        sent.keep("genai.no_content", span)


KVLIST_TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
KVLIST_SPAN_ID = "00f067aa0ba902b7"


def _kv(key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "value": value}


def kvlist_request() -> dict[str, Any]:
    """`gen_ai.tool.call.arguments` as a structured kvlist: hand-made OTLP/JSON (no Python SDK sends one)."""
    now = time.time_ns()
    arguments = {
        "kvlistValue": {
            "values": [
                _kv("amount", {"doubleValue": 12.5}),
                _kv("from", {"stringValue": "EUR"}),
                _kv("to", {"stringValue": "USD"}),
                _kv("days", {"intValue": "3"}),
                _kv("options", {"kvlistValue": {"values": [_kv("round", {"boolValue": True})]}}),
                _kv("tags", {"arrayValue": {"values": [{"stringValue": "fx"}]}}),
            ]
        }
    }
    span = {
        "traceId": KVLIST_TRACE_ID,
        "spanId": KVLIST_SPAN_ID,
        "name": "execute_tool convert_currency",
        "kind": 1,
        "startTimeUnixNano": str(now - 2_000_000),
        "endTimeUnixNano": str(now),
        "attributes": [
            _kv("gen_ai.operation.name", {"stringValue": "execute_tool"}),
            _kv("gen_ai.tool.name", {"stringValue": "convert_currency"}),
            _kv("gen_ai.tool.call.id", {"stringValue": "call_K1"}),
            _kv("gen_ai.tool.call.arguments", arguments),
            _kv(
                "gen_ai.tool.call.result",
                {"kvlistValue": {"values": [_kv("converted", {"doubleValue": 13.6})]}},
            ),
        ],
        "status": {},
    }
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv("service.name", {"stringValue": "kvlist-agent"})]},
                "scopeSpans": [{"scope": {"name": "hand-made"}, "spans": [span]}],
            }
        ]
    }


def post_kvlist_arguments(server: ServeProcess, sent: Sent, body: dict[str, Any] | None = None) -> None:
    request = urllib.request.Request(
        server.http_url,
        data=json.dumps(body or kvlist_request()).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        answer = json.loads(response.read() or b"{}")
    assert int(answer.get("partialSuccess", {}).get("rejectedSpans", 0)) == 0, answer
    sent.ids["genai.kvlist"] = (KVLIST_TRACE_ID, KVLIST_SPAN_ID)


def send_openinference_agno(tp: TracerProvider, sent: Sent) -> None:
    """openinference-instrumentation-agno: `{Agent}.run` AGENT span, TOOL span named after the function."""
    tracer = tp.get_tracer("openinference.instrumentation.agno")
    agent_attributes = {
        "openinference.span.kind": "AGENT",
        "graph.node.id": "node-travel",
        "graph.node.name": "Travel Agent",
        "agent.name": "Travel Agent",
        "agno.agent.id": "travel-agent",
        "agno.agent": "Travel Agent",
        "session.id": "sess-9",
        "input.value": "Weather in Rome?",
    }
    with tracer.start_as_current_span("Travel_Agent.run", attributes=agent_attributes) as agent:
        arguments = _json({"city": "Rome", "days": 2})
        tool_attributes = {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_forecast",
            "tool.description": "Forecast for a city",
            "tool.parameters": arguments,
            "input.value": arguments,
            "input.mime_type": "application/json",
        }
        with tracer.start_as_current_span("get_forecast", attributes=tool_attributes) as tool:
            tool.set_attribute("output.value", "Sunny, 24C")
            tool.set_attribute("output.mime_type", "text/plain")
            tool.set_status(Status(StatusCode.OK))
            sent.keep("openinference.agno", tool)
        agent.set_attribute("agno.run.id", "agno-run-5c1e")  # set when the run ends
        agent.set_status(Status(StatusCode.OK))


def send_traceloop_decorator(tp: TracerProvider, sent: Sent) -> None:
    """traceloop-sdk `@workflow` + `@tool` decorators: input wrapped as {"args": [...], "kwargs": {...}}."""
    tracer = tp.get_tracer("traceloop.tracer")
    workflow_attributes = {
        "traceloop.span.kind": "workflow",
        "traceloop.entity.name": "order_flow",
        "traceloop.workflow.name": "order_flow",
    }
    with tracer.start_as_current_span("order_flow.workflow", attributes=workflow_attributes) as workflow:
        sent.keep("traceloop.workflow", workflow)
        tool_attributes = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "lookup_order",
            "gen_ai.tool.name": "lookup_order",
            "traceloop.workflow.name": "order_flow",
            "traceloop.entity.path": "",
            "traceloop.entity.input": _json(
                {"args": [], "kwargs": {"order_id": "A-17", "include_items": True}}
            ),
        }
        with tracer.start_as_current_span("lookup_order.tool", attributes=tool_attributes) as tool:
            tool.set_attribute("traceloop.entity.output", _json({"status": "shipped", "items": 2}))
            sent.keep("traceloop.decorator", tool)


def send_traceloop_agno(tp: TracerProvider, sent: Sent) -> None:
    """opentelemetry-instrumentation-agno (OpenLLMetry): CLIENT spans, plain-dict input, repr output."""
    tracer = tp.get_tracer("opentelemetry.instrumentation.agno")
    agent_attributes = {
        "gen_ai.system": "agno",
        "traceloop.span.kind": "agent",
        "gen_ai.agent.name": "Support Agent",
        "agno.run.id": "agno-run-77",
    }
    with tracer.start_as_current_span(
        "Support Agent.agent", kind=SpanKind.CLIENT, attributes=agent_attributes
    ):
        tool_attributes = {
            "gen_ai.system": "agno",
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "check_stock",
            "gen_ai.tool.name": "check_stock",
            "tool.description": "Units in stock for a SKU",
            "traceloop.entity.input": _json({"sku": "X-1"}),
        }
        with tracer.start_as_current_span(
            "check_stock.tool", kind=SpanKind.CLIENT, attributes=tool_attributes
        ) as t:
            t.set_attribute("traceloop.entity.output", "status='success' result='3 in stock'")
            t.set_status(Status(StatusCode.OK))
            sent.keep("traceloop.agno", t)


def send_mcp_tools_call(tp: TracerProvider, sent: Sent) -> None:
    """An MCP client `tools/call` span (mcp.md): the JSON-RPC request id is the call id."""
    tracer = tp.get_tracer("mcp.client")
    attributes = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "search_docs",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": "7",
        "mcp.session.id": "mcp-sess-1",
        "mcp.protocol.version": "2025-06-18",
        "network.transport": "pipe",
        "gen_ai.tool.call.arguments": _json({"query": "rate limits"}),
    }
    with tracer.start_as_current_span(
        "tools/call search_docs", kind=SpanKind.CLIENT, attributes=attributes
    ) as span:
        result = {"content": [{"type": "text", "text": "100/min"}], "isError": False}
        span.set_attribute("gen_ai.tool.call.result", _json(result))
        sent.keep("mcp", span)


def _adk_tool_call(tracer: Tracer, name: str, args: dict[str, Any], call_id: str, response: Any) -> Span:
    """ADK's `execute_tool {name}` span with the attributes `trace_tool_call()` sets."""
    span = tracer.start_span(f"execute_tool {name}")
    span.set_attribute("gen_ai.operation.name", "execute_tool")
    span.set_attribute("gen_ai.tool.description", f"{name} tool")
    span.set_attribute("gen_ai.tool.name", name)
    span.set_attribute("gen_ai.tool.type", "FunctionTool")
    span.set_attribute("gcp.vertex.agent.llm_request", "{}")
    span.set_attribute("gcp.vertex.agent.llm_response", "{}")
    span.set_attribute("gcp.vertex.agent.tool_call_args", json.dumps(args, ensure_ascii=False))
    span.set_attribute("gen_ai.tool.call.id", call_id)
    span.set_attribute("gcp.vertex.agent.event_id", f"evt-{name}")
    wrapped = response if isinstance(response, dict) else {"result": response}
    span.set_attribute("gcp.vertex.agent.tool_response", json.dumps(wrapped, ensure_ascii=False))
    span.end()
    return span


def _adk_merged_tool_calls(tracer: Tracer, event_id: str) -> None:
    """ADK's `execute_tool (merged)` span after parallel calls (`trace_merged_tool_calls()`): no execution."""
    with tracer.start_as_current_span("execute_tool (merged)") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", "(merged tools)")
        span.set_attribute("gen_ai.tool.description", "(merged tools)")
        span.set_attribute("gen_ai.tool.call.id", event_id)
        span.set_attribute("gcp.vertex.agent.tool_call_args", "N/A")
        span.set_attribute("gcp.vertex.agent.event_id", event_id)
        span.set_attribute("gcp.vertex.agent.tool_response", _json({"id": event_id, "author": "adk_weather"}))
        span.set_attribute("gcp.vertex.agent.llm_request", "{}")
        span.set_attribute("gcp.vertex.agent.llm_response", "{}")


def send_adk(tp: TracerProvider, sent: Sent) -> None:
    """Google ADK: scope `gcp.vertex.agent`, vendor content keys, HITL confirmation as a synthetic call."""
    tracer = tp.get_tracer("gcp.vertex.agent", schema_url="https://opentelemetry.io/schemas/1.37.0")
    with (
        tracer.start_as_current_span("invocation"),
        tracer.start_as_current_span("invoke_agent adk_weather") as agent,
    ):
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.agent.description", "Answers weather questions")
        agent.set_attribute("gen_ai.agent.name", "adk_weather")
        agent.set_attribute("gen_ai.conversation.id", "adk-session-1")
        sent.keep("adk.agent", agent)
        llm_attributes = {
            "gen_ai.system": "gcp.vertex.agent",
            "gen_ai.request.model": "gemini-2.0-flash",
            "gcp.vertex.agent.invocation_id": "e-inv-1",
            "gcp.vertex.agent.session_id": "adk-session-1",
            "gcp.vertex.agent.event_id": "evt-llm-1",
        }
        with tracer.start_as_current_span("call_llm", attributes=llm_attributes):
            pass
        # Two calls in parallel: ADK adds an `execute_tool (merged)` span for its dev UI.
        tool = _adk_tool_call(tracer, "get_capital", {"country": "France"}, "<not specified>", "Paris")
        sent.keep("adk.tool", tool)
        _adk_tool_call(tracer, "get_population", {"country": "France"}, "adk-fc-0", 68_000_000)
        _adk_merged_tool_calls(tracer, "evt-merged-1")
        confirmation_args = {
            "originalFunctionCall": {"id": "adk-fc-1", "name": "transfer_funds", "args": {"amount": 500}},
            "toolConfirmation": {"hint": "Approve the transfer?", "confirmed": False},
        }
        confirmation = _adk_tool_call(
            tracer, "adk_request_confirmation", confirmation_args, "adk-fc-2", "<not specified>"
        )
        sent.keep("adk.confirmation", confirmation)


def send_pydantic_ai_v2(tp: TracerProvider, sent: Sent) -> None:
    """pydantic-ai instrumentation v2: `agent run`, `running tool`, `tool_arguments`, `tool_response`."""
    tracer = tp.get_tracer("pydantic-ai")
    agent_attributes = {"agent_name": "support_bot", "model_name": "gpt-4o", "logfire.msg": "support_bot run"}
    with tracer.start_as_current_span("agent run", attributes=agent_attributes) as agent:
        sent.keep("pydantic_v2.agent", agent)
        tool_attributes = {
            "gen_ai.tool.name": "lookup_customer",
            "gen_ai.tool.call.id": "call_P2",
            "tool_arguments": '{"customer_id":42}',
            "logfire.msg": "running tool: lookup_customer",
        }
        with tracer.start_as_current_span("running tool", attributes=tool_attributes) as tool:
            tool.set_attribute("tool_response", '{"name":"Ada","tier":"gold"}')
            sent.keep("pydantic_v2.tool", tool)


def strands_agent(tracer: Tracer, *, latest: bool) -> AbstractContextManager[Span]:
    provider_key = "gen_ai.provider.name" if latest else "gen_ai.system"
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        provider_key: "strands-agents",
        "gen_ai.agent.name": "Strands Agents",
        "gen_ai.request.model": "us.anthropic.claude-sonnet-4",
    }
    return tracer.start_as_current_span("invoke_agent Strands Agents", attributes=attributes)


def _operation_details(span: Span, key: str, messages: list[dict[str, Any]]) -> None:
    """Strands' latest-mode event: `gen_ai.input.messages` or `gen_ai.output.messages` as JSON text."""
    span.add_event("gen_ai.client.inference.operation.details", {key: _json(messages)})


def send_strands_latest(tp: TracerProvider, sent: Sent) -> None:
    """Strands with gen_ai_latest_experimental opted in: content in operation.details events."""
    tracer = tp.get_tracer("strands.telemetry.tracer")
    # Strands maps a toolUse block to this part on the chat span's output and on the tool span's input.
    call = {
        "type": "tool_call",
        "name": "get_time",
        "id": "tooluse_T1",
        "arguments": {"timezone": "Europe/Paris"},
    }
    with (
        strands_agent(tracer, latest=True) as agent,
        tracer.start_as_current_span("execute_event_loop_cycle", attributes={"event_loop.cycle_id": "c-1"}),
    ):
        sent.keep("strands_latest.agent", agent)
        chat_attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "strands-agents"}
        with tracer.start_as_current_span("chat", attributes=chat_attributes) as chat:
            user = {"role": "user", "parts": [{"type": "text", "content": "Time in Paris?"}]}
            _operation_details(chat, "gen_ai.input.messages", [user])
            reply = {"role": "assistant", "parts": [call], "finish_reason": "tool_use"}
            _operation_details(chat, "gen_ai.output.messages", [reply])
            chat.set_status(Status(StatusCode.OK))
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.provider.name": "strands-agents",
            "gen_ai.tool.name": "get_time",
            "gen_ai.tool.call.id": "tooluse_T1",
        }
        with tracer.start_as_current_span("execute_tool get_time", attributes=attributes) as tool:
            _operation_details(tool, "gen_ai.input.messages", [{"role": "tool", "parts": [call]}])
            tool.set_attribute("gen_ai.tool.status", "success")
            response = {"type": "tool_call_response", "id": "tooluse_T1", "response": [{"text": "14:05"}]}
            _operation_details(tool, "gen_ai.output.messages", [{"role": "tool", "parts": [response]}])
            tool.set_status(Status(StatusCode.OK))
            sent.keep("strands_latest.tool", tool)


def send_strands_legacy(tp: TracerProvider, sent: Sent) -> None:
    """Strands' default (pre-1.37) shape: gen_ai.tool.message + gen_ai.choice events; chat is no tool."""
    tracer = tp.get_tracer("strands.telemetry.tracer")
    with strands_agent(tracer, latest=False) as agent:
        sent.keep("strands_legacy.agent", agent)
        chat_attributes = {"gen_ai.operation.name": "chat", "gen_ai.system": "strands-agents"}
        with tracer.start_as_current_span("chat", attributes=chat_attributes) as chat:
            chat.add_event("gen_ai.user.message", {"content": _json([{"text": "Weather in Lima?"}])})
            tool_use = {
                "toolUse": {"toolUseId": "tooluse_L1", "name": "get_conditions", "input": {"city": "Lima"}}
            }
            chat.add_event("gen_ai.choice", {"finish_reason": "tool_use", "message": _json([tool_use])})
            chat.set_status(Status(StatusCode.OK))
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.system": "strands-agents",
            "gen_ai.tool.name": "get_conditions",
            "gen_ai.tool.call.id": "tooluse_L1",
        }
        with tracer.start_as_current_span("execute_tool get_conditions", attributes=attributes) as tool:
            tool.add_event(
                "gen_ai.tool.message",
                {"role": "tool", "content": _json({"city": "Lima"}), "id": "tooluse_L1"},
            )
            tool.set_attribute("gen_ai.tool.status", "success")
            tool.add_event("gen_ai.choice", {"message": _json([{"text": "cloudy"}]), "id": "tooluse_L1"})
            tool.set_status(Status(StatusCode.OK))
            sent.keep("strands_legacy.tool", tool)


def send_errors(tp: TracerProvider, sent: Sent) -> None:
    """The error signals: status ERROR, `error.type`, an `exception` event, pydantic-ai's failure stage."""
    tracer = tp.get_tracer("pydantic-ai")
    attributes = pydantic_ai_tool_attributes("fetch_rates", "call_E1", "{}")
    with tracer.start_as_current_span("execute_tool fetch_rates", attributes=attributes) as span:
        span.set_status(Status(StatusCode.ERROR, "upstream returned 503"))
        sent.keep("error.status", span)

    attributes = pydantic_ai_tool_attributes("slow_query", "call_E2", '{"sql": "SELECT 1"}')
    with tracer.start_as_current_span("execute_tool slow_query", attributes=attributes) as span:
        span.set_attribute("error.type", "timeout")
        sent.keep("error.type", span)

    # The SDK's own context manager: records the exception and sets ERROR "LookupError: ..." on the way out.
    attributes = pydantic_ai_tool_attributes("find_city", "call_E3", '{"name": "Atlantis"}')
    with (
        suppress(LookupError),
        tracer.start_as_current_span("execute_tool find_city", attributes=attributes) as span,
    ):
        sent.keep("error.raised", span)
        raise LookupError("no such city: Atlantis")

    # pydantic-ai's `_run_tool_span`: record_exception(escaped=True) and ERROR with no description.
    attributes = pydantic_ai_tool_attributes("open_socket", "call_E4", '{"port": 443}')
    with tracer.start_as_current_span(
        "execute_tool open_socket",
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        span.record_exception(ConnectionResetError("connection reset by peer"), escaped=True)
        span.set_status(Status(StatusCode.ERROR))
        sent.keep("error.exception_event", span)

    # pydantic-ai argument validation failed: the tool never ran.
    attributes = pydantic_ai_tool_attributes("book_flight", "call_E5", '{"date": "tomorrow"}')
    attributes["logfire.msg"] = "invalid tool call: book_flight"
    attributes["pydantic_ai.tool.failure_stage"] = "validation"
    message = "1 validation error for book_flight\ndate\n  Input should be a valid date"
    attributes["gen_ai.tool.call.result"] = message
    with tracer.start_as_current_span(
        "execute_tool book_flight",
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        span.record_exception(ValidationError(message), escaped=True)
        span.set_status(Status(StatusCode.ERROR))
        sent.keep("error.validation", span)


def send_pauses(tp: TracerProvider, sent: Sent) -> None:
    """Paused by our attributes and by pydantic-ai's deferral; and a call replayed from history."""
    tracer = tp.get_tracer("pydantic-ai")
    attributes = pydantic_ai_tool_attributes("ask_manager", "call_H1", '{"question": "Refund 80 EUR?"}')
    attributes |= {"tracescore.tool.paused": True, "tracescore.tool.pause_reason": "user_input"}
    with tracer.start_as_current_span("execute_tool ask_manager", attributes=attributes) as span:
        sent.keep("paused.tracescore", span)

    # Instrumentation version < 5 also records the deferral as an exception with status ERROR.
    attributes = pydantic_ai_tool_attributes("refund_order", "call_H2", '{"order_id": "A-17"}')
    with tracer.start_as_current_span(
        "execute_tool refund_order",
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        span.set_attribute("pydantic_ai.tool.deferral.name", "ApprovalRequired")
        span.record_exception(ApprovalRequired(), escaped=True)
        span.set_status(Status(StatusCode.ERROR))
        sent.keep("paused.pydantic_deferral", span)

    attributes = pydantic_ai_tool_attributes("lookup_weather", "call_H3", '{"city": "Oslo"}')
    attributes["tracescore.tool.from_history"] = True
    with tracer.start_as_current_span("execute_tool lookup_weather", attributes=attributes) as span:
        span.set_attribute("gen_ai.tool.call.result", '"snow"')
        sent.keep("from_history", span)


def send_langgraph_interrupt(tp: TracerProvider, sent: Sent) -> None:
    """openinference-instrumentation-langchain: a tool that raised GraphInterrupt keeps status OK."""
    tracer = tp.get_tracer("openinference.instrumentation.langchain")
    chain = {"openinference.span.kind": "CHAIN", "session.id": "thread-1"}
    attributes = {
        "openinference.span.kind": "TOOL",
        "tool.name": "ask_human",
        "tool.description": "Ask a human",
        "input.value": "{'question': 'Ship on Friday?'}",  # LangChain's str() of the tool input
    }
    with (
        tracer.start_as_current_span("LangGraph", attributes=chain),
        tracer.start_as_current_span("tools", attributes=chain),
        tracer.start_as_current_span(
            "ask_human", attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span,
    ):
        span.record_exception(GraphInterrupt(("Ship on Friday?",)))
        span.set_status(Status(StatusCode.OK))
        sent.keep("paused.langgraph", span)


def send_genai_requests(tp: TracerProvider, sent: Sent) -> None:
    """Request side, OTel GenAI: `gen_ai.output.messages` tool_call parts on chat spans, two rounds."""
    tracer = tp.get_tracer("pydantic-ai")
    with pydantic_ai_agent(tracer, "trip_planner", "pyd-run-req"):
        first_round = [
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": "Checking both."},
                    {
                        "type": "tool_call",
                        "id": "call_R1",
                        "name": "find_flights",
                        "arguments": {"to": "CDG"},
                    },
                    {
                        "type": "tool_call",
                        "id": "call_R2",
                        "name": "find_hotels",
                        "arguments": {"city": "Paris"},
                    },
                ],
                "finish_reason": "tool_call",
            }
        ]
        chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
        with tracer.start_as_current_span("chat gpt-4o", attributes=chat) as span:
            span.set_attribute("gen_ai.output.messages", _json(first_round))
        for name, call_id, arguments in (
            ("find_flights", "call_R1", {"to": "CDG"}),
            ("find_hotels", "call_R2", {"city": "Paris"}),
        ):
            attributes = pydantic_ai_tool_attributes(name, call_id, _json(arguments))
            with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes) as tool:
                tool.set_attribute("gen_ai.tool.call.result", '"ok"')
                sent.keep(f"requests.genai.{name}", tool)
        second_round = [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "call_R3",
                        "name": "book_trip",
                        "arguments": {"flight": "SK831"},
                    }
                ],
                "finish_reason": "tool_call",
            }
        ]
        with tracer.start_as_current_span("chat gpt-4o", attributes=chat) as span:
            span.set_attribute("gen_ai.output.messages", _json(second_round))


def send_openinference_requests(tp: TracerProvider, sent: Sent) -> None:
    """Request side, OpenInference flattened tool calls; the TOOL spans carry no call id (Agno)."""
    tracer = tp.get_tracer("openinference.instrumentation.agno")
    agent_attributes = {"openinference.span.kind": "AGENT", "agent.name": "Stock Agent"}
    with tracer.start_as_current_span("Stock_Agent.run", attributes=agent_attributes) as agent:
        prefix = "llm.output_messages.0.message"
        llm = {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o",
            f"{prefix}.role": "assistant",
            f"{prefix}.tool_calls.0.tool_call.id": "call_S1",
            f"{prefix}.tool_calls.0.tool_call.function.name": "get_price",
            f"{prefix}.tool_calls.0.tool_call.function.arguments": _json({"symbol": "AAPL"}),
            f"{prefix}.tool_calls.1.tool_call.id": "call_S2",
            f"{prefix}.tool_calls.1.tool_call.function.name": "get_price",
            f"{prefix}.tool_calls.1.tool_call.function.arguments": _json({"symbol": "MSFT"}),
        }
        with tracer.start_as_current_span("OpenAIChat.invoke", attributes=llm):
            pass
        # Executed in the other order: the call ids must follow the arguments, not the position.
        for symbol in ("MSFT", "AAPL"):
            arguments = _json({"symbol": symbol})
            attributes = {
                "openinference.span.kind": "TOOL",
                "tool.name": "get_price",
                "tool.parameters": arguments,
                "input.value": arguments,
                "input.mime_type": "application/json",
            }
            with tracer.start_as_current_span("get_price", attributes=attributes) as tool:
                tool.set_attribute("output.value", "190.5" if symbol == "AAPL" else "410.2")
                tool.set_status(Status(StatusCode.OK))
                sent.keep(f"requests.openinference.{symbol}", tool)
        agent.set_attribute("agno.run.id", "agno-run-stock")


def send_openllmetry_requests(tp: TracerProvider, sent: Sent) -> None:
    """Request side, old OpenLLMetry flattened `gen_ai.completion.<i>.tool_calls.<j>.*`; a decorated tool."""
    workflow_tracer = tp.get_tracer("traceloop.tracer")
    openai_tracer = tp.get_tracer("opentelemetry.instrumentation.openai.v1")
    workflow_attributes = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "billing"}
    with workflow_tracer.start_as_current_span(
        "billing.workflow", attributes=workflow_attributes
    ) as workflow:
        sent.keep("requests.openllmetry.workflow", workflow)
        chat = {
            "llm.request.type": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "How much is INV-9?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.tool_calls.0.id": "call_O1",
            "gen_ai.completion.0.tool_calls.0.name": "lookup_invoice",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"invoice_id":"INV-9"}',
        }
        with openai_tracer.start_as_current_span("openai.chat", kind=SpanKind.CLIENT, attributes=chat):
            pass
        tool_attributes = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "lookup_invoice",
            "traceloop.entity.input": _json({"args": [], "kwargs": {"invoice_id": "INV-9"}}),
        }
        with workflow_tracer.start_as_current_span("lookup_invoice.tool", attributes=tool_attributes) as tool:
            tool.set_attribute("traceloop.entity.output", _json({"amount": 120}))
            sent.keep("requests.openllmetry.tool", tool)


def send_runs(tp: TracerProvider, sent: Sent) -> None:
    """Runs and teams: an explicit run id, a team of nested agents, a trace with no agent at all."""
    tracer = tp.get_tracer("pydantic-ai")
    with pydantic_ai_agent(tracer, "triage", "pyd-run-x") as agent:
        agent.set_attribute("tracescore.run.id", "eval-run-42")
        attributes = pydantic_ai_tool_attributes("classify_ticket", "call_X1", '{"text": "printer on fire"}')
        with tracer.start_as_current_span("execute_tool classify_ticket", attributes=attributes) as tool:
            sent.keep("runs.explicit", tool)

    with pydantic_ai_agent(tracer, "leader", "team-run-1"):
        attributes = pydantic_ai_tool_attributes("plan_research", "call_T1", '{"topic": "tides"}')
        with tracer.start_as_current_span("execute_tool plan_research", attributes=attributes) as tool:
            sent.keep("runs.team.leader_tool", tool)
        with pydantic_ai_agent(tracer, "member", "member-run-9"):
            attributes = pydantic_ai_tool_attributes("web_search", "call_T2", '{"q": "tides"}')
            with tracer.start_as_current_span("execute_tool web_search", attributes=attributes) as tool:
                sent.keep("runs.team.member_tool", tool)

    attributes = pydantic_ai_tool_attributes("ping", "call_Z1", "{}")
    with tracer.start_as_current_span("execute_tool ping", attributes=attributes) as tool:
        sent.keep("runs.no_agent", tool)


def send_task_rollout(tp: TracerProvider, sent: Sent) -> None:
    """`tracescore.task.id` on the resource (the provider's), not on any span."""
    tracer = tp.get_tracer("pydantic-ai")
    with pydantic_ai_agent(tracer, "dispatcher", "pyd-run-task"):
        attributes = pydantic_ai_tool_attributes("lookup_shipping_cutoff", "call_C1", '{"region": "north"}')
        with tracer.start_as_current_span(
            "execute_tool lookup_shipping_cutoff", attributes=attributes
        ) as tool:
            sent.keep("runs.task", tool)


def send_unknown(tp: TracerProvider, sent: Sent) -> None:
    """Spans of no tool convention: stored raw, never executions."""
    tracer = tp.get_tracer("my.app")
    db = {"db.system.name": "postgresql", "db.query.text": "SELECT * FROM orders"}
    with tracer.start_as_current_span("SELECT orders", kind=SpanKind.CLIENT, attributes=db) as span:
        sent.keep("unknown", span)
        with tracer.start_as_current_span(
            "GET", kind=SpanKind.CLIENT, attributes={"http.request.method": "GET"}
        ):
            pass


TASK_ID = "task-direct-lookup"

# (fixture, which provider sends it): both OTLP transports carry a share.
BUILDERS: tuple[tuple[Builder, str], ...] = (
    (send_genai_json_arguments, "grpc"),
    (send_genai_without_content, "http"),
    (send_openinference_agno, "grpc"),
    (send_traceloop_decorator, "http"),
    (send_traceloop_agno, "grpc"),
    (send_mcp_tools_call, "http"),
    (send_adk, "http"),
    (send_pydantic_ai_v2, "grpc"),
    (send_strands_latest, "grpc"),
    (send_strands_legacy, "http"),
    (send_errors, "grpc"),
    (send_pauses, "http"),
    (send_langgraph_interrupt, "grpc"),
    (send_genai_requests, "grpc"),
    (send_openinference_requests, "http"),
    (send_openllmetry_requests, "grpc"),
    (send_runs, "http"),
    (send_task_rollout, "task"),
    (send_unknown, "grpc"),
)


def _task_provider(server: ServeProcess) -> TracerProvider:
    tp = TracerProvider(
        resource=Resource.create({"service.name": "rollout-agent", "tracescore.task.id": TASK_ID})
    )
    tp.add_span_processor(BatchSpanProcessor(exporter(server, "grpc")))
    return tp


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stored]:
    directory: Path = tmp_path_factory.mktemp("conventions")
    server = ServeProcess(db=directory / "traces.duckdb").start()
    try:
        providers = {
            "grpc": provider(server, "grpc"),
            "http": provider(server, "http"),
            "task": _task_provider(server),
        }
        sent = Sent()
        for build, which in BUILDERS:
            build(providers[which], sent)
        for tp in providers.values():
            assert tp.force_flush(10_000)
            tp.shutdown()
        post_kvlist_arguments(server, sent)
        assert server.stop() == 0, server.log()
        yield Stored.load(server, sent)
    finally:
        server.kill()


# --------------------------------------------------------------------------------------------------
# 1. OTel GenAI execute_tool
# --------------------------------------------------------------------------------------------------


def test_genai_arguments_as_json_string(stored: Stored) -> None:
    assert stored.execution("genai.json") == clean_row(
        tool_name="get_weather",
        arguments={"city": "Paris", "days": 3},
        arguments_raw='{"city": "Paris", "days": 3}',
        result={"temp_c": 21, "sky": "clear"},
        call_id="call_W1",
        call_id_source="span",
        convention="gen_ai",
        agent_path="weather_agent",
        run_id="pyd-run-7f3a",
    )


def test_genai_arguments_as_kvlist(stored: Stored) -> None:
    assert stored.execution("genai.kvlist") == clean_row(
        tool_name="convert_currency",
        arguments={
            "amount": 12.5,
            "from": "EUR",
            "to": "USD",
            "days": 3,
            "options": {"round": True},
            "tags": ["fx"],
        },
        arguments_raw=None,  # structured on the wire: there is no text to keep
        result={"converted": 13.6},
        call_id="call_K1",
        call_id_source="span",
        convention="gen_ai",
        run_id=KVLIST_TRACE_ID,
    )


def test_genai_without_content_capture_has_null_arguments_not_empty(stored: Stored) -> None:
    assert stored.execution("genai.no_content") == clean_row(
        tool_name="get_weather",
        call_id="call_N1",
        call_id_source="span",
        convention="gen_ai",
        run_id=stored.sent.trace_id("genai.no_content"),
    )


# --------------------------------------------------------------------------------------------------
# 2. OpenInference (Agno)
# --------------------------------------------------------------------------------------------------


def test_openinference_agno_tool_in_agent_run(stored: Stored) -> None:
    assert stored.execution("openinference.agno") == clean_row(
        tool_name="get_forecast",
        arguments={"city": "Rome", "days": 2},
        arguments_raw='{"city": "Rome", "days": 2}',
        result="Sunny, 24C",
        convention="openinference",
        agent_path="Travel Agent",
        run_id="agno-run-5c1e",
    )


# --------------------------------------------------------------------------------------------------
# 3. OpenLLMetry / Traceloop
# --------------------------------------------------------------------------------------------------


def test_traceloop_decorator_input_is_unwrapped_to_kwargs(stored: Stored) -> None:
    assert stored.execution("traceloop.decorator") == clean_row(
        tool_name="lookup_order",
        arguments={"order_id": "A-17", "include_items": True},
        arguments_raw='{"args": [], "kwargs": {"order_id": "A-17", "include_items": true}}',
        result={"status": "shipped", "items": 2},
        convention="traceloop",
        agent_path="order_flow",
        run_id=stored.sent.span_id("traceloop.workflow"),  # a workflow with no run id: its span id
    )


def test_traceloop_agno_plain_dict_input(stored: Stored) -> None:
    assert stored.execution("traceloop.agno") == clean_row(
        tool_name="check_stock",
        arguments={"sku": "X-1"},
        arguments_raw='{"sku": "X-1"}',
        result="status='success' result='3 in stock'",
        convention="traceloop",
        agent_path="Support Agent",
        run_id="agno-run-77",
    )


# --------------------------------------------------------------------------------------------------
# 4. MCP
# --------------------------------------------------------------------------------------------------


def test_mcp_tools_call_uses_the_jsonrpc_request_id(stored: Stored) -> None:
    assert stored.execution("mcp") == clean_row(
        tool_name="search_docs",
        arguments={"query": "rate limits"},
        arguments_raw='{"query": "rate limits"}',
        result={"content": [{"type": "text", "text": "100/min"}], "isError": False},
        call_id="7",
        call_id_source="span",
        convention="mcp",
        run_id=stored.sent.trace_id("mcp"),
    )


# --------------------------------------------------------------------------------------------------
# 5. Google ADK
# --------------------------------------------------------------------------------------------------


def test_adk_vendor_keys_and_unspecified_call_id(stored: Stored) -> None:
    row = stored.execution("adk.tool")
    # The run id is asserted on its own in test_adk_run_id_is_the_invocation_id.
    assert row | {"run_id": "(see below)"} == clean_row(
        tool_name="get_capital",
        arguments={"country": "France"},
        arguments_raw='{"country": "France"}',
        result="Paris",  # what the tool returned: ADK's `{"result": …}` wrapper is taken off (issue #16)
        call_id=None,  # "<not specified>" is ADK's placeholder, not an id
        call_id_source=None,
        convention="adk",
        agent_path="adk_weather",
        run_id="(see below)",
    )


def test_adk_request_confirmation_is_a_pause(stored: Stored) -> None:
    row = stored.execution("adk.confirmation")
    assert row | {"run_id": "(see below)"} == clean_row(
        tool_name="adk_request_confirmation",
        arguments={
            "originalFunctionCall": {"id": "adk-fc-1", "name": "transfer_funds", "args": {"amount": 500}},
            "toolConfirmation": {"hint": "Approve the transfer?", "confirmed": False},
        },
        arguments_raw=(
            '{"originalFunctionCall": {"id": "adk-fc-1", "name": "transfer_funds", "args": {"amount": 500}}, '
            '"toolConfirmation": {"hint": "Approve the transfer?", "confirmed": false}}'
        ),
        result=None,  # `{"result": "<not specified>"}`: ADK's placeholder, nothing was returned
        call_id="adk-fc-2",
        call_id_source="span",
        paused=True,
        pause_reason="confirmation",
        convention="adk",
        agent_path="adk_weather",
        run_id="(see below)",
    )


def test_adk_executions_share_one_run(stored: Stored) -> None:
    assert stored.execution("adk.tool")["run_id"] == stored.execution("adk.confirmation")["run_id"]


def test_adk_merged_span_of_parallel_calls_is_not_an_execution(stored: Stored) -> None:
    assert "execute_tool (merged)" in stored.span_names[stored.sent.trace_id("adk.tool")]
    # get_capital, get_population and the confirmation; "(merged tools)" would be an extra tool.
    assert stored.executions_in_trace("adk.tool") == 3


def test_adk_run_id_is_the_invocation_id(stored: Stored) -> None:
    assert stored.execution("adk.tool")["run_id"] == "e-inv-1"


# --------------------------------------------------------------------------------------------------
# 6. pydantic-ai instrumentation version 2
# --------------------------------------------------------------------------------------------------


def test_pydantic_ai_v2_running_tool(stored: Stored) -> None:
    assert stored.execution("pydantic_v2.tool") == clean_row(
        tool_name="lookup_customer",
        arguments={"customer_id": 42},
        arguments_raw='{"customer_id":42}',
        result={"name": "Ada", "tier": "gold"},
        call_id="call_P2",
        call_id_source="span",
        convention="pydantic_ai_v2",
        agent_path="support_bot",
        run_id=stored.sent.span_id("pydantic_v2.agent"),
    )


# --------------------------------------------------------------------------------------------------
# 7. Strands (content in span events)
# --------------------------------------------------------------------------------------------------


def test_strands_latest_operation_details_events(stored: Stored) -> None:
    assert stored.execution("strands_latest.tool") == clean_row(
        tool_name="get_time",
        arguments={"timezone": "Europe/Paris"},
        result="14:05",  # Strands' one-block content list taken off (issue #16)
        call_id="tooluse_T1",
        call_id_source="span",
        convention="strands",
        agent_path="Strands Agents",
        run_id=stored.sent.span_id("strands_latest.agent"),
    )


def test_strands_latest_request_from_chat_span_event(stored: Stored) -> None:
    assert stored.requests_in_trace("strands_latest.tool") == [
        {
            "tool_name": "get_time",
            "call_id": "tooluse_T1",
            "arguments": {"timezone": "Europe/Paris"},
            "round": 1,
            "execution_span_id": stored.sent.span_id("strands_latest.tool"),
            "encoding": "gen_ai",
            "run_id": stored.sent.span_id("strands_latest.agent"),
        }
    ]


def test_strands_legacy_tool_message_and_choice_events(stored: Stored) -> None:
    assert stored.execution("strands_legacy.tool") == clean_row(
        tool_name="get_conditions",
        arguments={"city": "Lima"},
        arguments_raw='{"city": "Lima"}',
        result="cloudy",  # Strands' one-block content list taken off (issue #16)
        call_id="tooluse_L1",
        call_id_source="span",
        convention="strands",
        agent_path="Strands Agents",
        run_id=stored.sent.span_id("strands_legacy.agent"),
    )


def test_strands_chat_span_with_choice_events_is_not_an_execution(stored: Stored) -> None:
    assert stored.executions_in_trace("strands_legacy.tool") == 1


# --------------------------------------------------------------------------------------------------
# 8. Errors
# --------------------------------------------------------------------------------------------------


def pydantic_ai_row(
    stored: Stored, label: str, *, tool_name: str, call_id: str, arguments_raw: str, **columns: Any
) -> dict[str, Any]:
    """The expected row of a pydantic-ai ≥ v3 tool span with no agent above it (so the trace is the run)."""
    return clean_row(
        tool_name=tool_name,
        arguments=json.loads(arguments_raw),
        arguments_raw=arguments_raw,
        call_id=call_id,
        call_id_source="span",
        convention="gen_ai",
        run_id=stored.sent.trace_id(label),
        **columns,
    )


def test_error_from_status_with_description(stored: Stored) -> None:
    assert stored.execution("error.status") == pydantic_ai_row(
        stored,
        "error.status",
        tool_name="fetch_rates",
        call_id="call_E1",
        arguments_raw="{}",
        error=True,
        error_message="upstream returned 503",
    )


def test_error_from_error_type_attribute(stored: Stored) -> None:
    assert stored.execution("error.type") == pydantic_ai_row(
        stored,
        "error.type",
        tool_name="slow_query",
        call_id="call_E2",
        arguments_raw='{"sql": "SELECT 1"}',
        error=True,
        error_type="timeout",
    )


def test_error_from_exception_raised_in_the_span(stored: Stored) -> None:
    assert stored.execution("error.raised") == pydantic_ai_row(
        stored,
        "error.raised",
        tool_name="find_city",
        call_id="call_E3",
        arguments_raw='{"name": "Atlantis"}',
        error=True,
        error_type="LookupError",
        error_message="LookupError: no such city: Atlantis",
    )


def test_error_message_from_exception_event_when_status_has_none(stored: Stored) -> None:
    assert stored.execution("error.exception_event") == pydantic_ai_row(
        stored,
        "error.exception_event",
        tool_name="open_socket",
        call_id="call_E4",
        arguments_raw='{"port": 443}',
        error=True,
        error_type="ConnectionResetError",
        error_message="connection reset by peer",
    )


def test_error_from_pydantic_ai_validation_failure(stored: Stored) -> None:
    message = "1 validation error for book_flight\ndate\n  Input should be a valid date"
    assert stored.execution("error.validation") == pydantic_ai_row(
        stored,
        "error.validation",
        tool_name="book_flight",
        call_id="call_E5",
        arguments_raw='{"date": "tomorrow"}',
        result=message,
        error=True,
        error_type="validation_failed",  # the stage, not the exception's class: the tool never ran
        error_message=message,
    )


# --------------------------------------------------------------------------------------------------
# 9. Paused, and replayed from history
# --------------------------------------------------------------------------------------------------


def test_paused_by_tracescore_attributes(stored: Stored) -> None:
    assert stored.execution("paused.tracescore") == pydantic_ai_row(
        stored,
        "paused.tracescore",
        tool_name="ask_manager",
        call_id="call_H1",
        arguments_raw='{"question": "Refund 80 EUR?"}',
        paused=True,
        pause_reason="user_input",
    )


def test_paused_by_pydantic_ai_deferral_is_not_an_error(stored: Stored) -> None:
    assert stored.execution("paused.pydantic_deferral") == pydantic_ai_row(
        stored,
        "paused.pydantic_deferral",
        tool_name="refund_order",
        call_id="call_H2",
        arguments_raw='{"order_id": "A-17"}',
        paused=True,
        pause_reason="confirmation",
    )


def test_paused_by_langgraph_interrupt_with_status_ok(stored: Stored) -> None:
    raw = "{'question': 'Ship on Friday?'}"
    assert stored.execution("paused.langgraph") == clean_row(
        tool_name="ask_human",
        # Not JSON but a Python repr: read as literal syntax (never evaluated), the text kept.
        arguments={"question": "Ship on Friday?"},
        arguments_raw=raw,
        paused=True,
        pause_reason="user_input",
        convention="openinference",
        run_id=stored.sent.trace_id("paused.langgraph"),
    )


def test_from_history(stored: Stored) -> None:
    assert stored.execution("from_history") == pydantic_ai_row(
        stored,
        "from_history",
        tool_name="lookup_weather",
        call_id="call_H3",
        arguments_raw='{"city": "Oslo"}',
        result="snow",
        from_history=True,
    )


# --------------------------------------------------------------------------------------------------
# 10. Request side
# --------------------------------------------------------------------------------------------------


def test_genai_output_messages_give_requests_in_rounds(stored: Stored) -> None:
    flights = stored.sent.span_id("requests.genai.find_flights")
    hotels = stored.sent.span_id("requests.genai.find_hotels")
    common = {"encoding": "gen_ai", "run_id": "pyd-run-req"}
    assert stored.requests_in_trace("requests.genai.find_flights") == [
        {"tool_name": "find_flights", "call_id": "call_R1", "arguments": {"to": "CDG"}, "round": 1}
        | {"execution_span_id": flights, **common},
        {"tool_name": "find_hotels", "call_id": "call_R2", "arguments": {"city": "Paris"}, "round": 1}
        | {"execution_span_id": hotels, **common},
        # Requested, never executed: evidence of a refusal or a pause, never of an execution.
        {"tool_name": "book_trip", "call_id": "call_R3", "arguments": {"flight": "SK831"}, "round": 2}
        | {"execution_span_id": None, **common},
    ]
    assert stored.execution("requests.genai.find_flights")["call_id_source"] == "span"


def test_openinference_requests_recover_call_ids_by_arguments(stored: Stored) -> None:
    msft = stored.sent.span_id("requests.openinference.MSFT")
    aapl = stored.sent.span_id("requests.openinference.AAPL")
    common = {"tool_name": "get_price", "round": 1, "encoding": "openinference", "run_id": "agno-run-stock"}
    assert stored.requests_in_trace("requests.openinference.MSFT") == [
        {"call_id": "call_S1", "arguments": {"symbol": "AAPL"}, "execution_span_id": aapl, **common},
        {"call_id": "call_S2", "arguments": {"symbol": "MSFT"}, "execution_span_id": msft, **common},
    ]
    for symbol, call_id, price in (("MSFT", "call_S2", 410.2), ("AAPL", "call_S1", 190.5)):
        arguments = {"symbol": symbol}
        assert stored.execution(f"requests.openinference.{symbol}") == clean_row(
            tool_name="get_price",
            arguments=arguments,
            arguments_raw=_json(arguments),
            result=price,  # output.value "190.5" is JSON text, so it is stored as a number
            call_id=call_id,
            call_id_source="request",
            convention="openinference",
            agent_path="Stock Agent",
            run_id="agno-run-stock",
        )


def test_openllmetry_completion_tool_calls_recover_the_call_id(stored: Stored) -> None:
    tool = stored.sent.span_id("requests.openllmetry.tool")
    workflow = stored.sent.span_id("requests.openllmetry.workflow")
    assert stored.requests_in_trace("requests.openllmetry.tool") == [
        {
            "tool_name": "lookup_invoice",
            "call_id": "call_O1",
            "arguments": {"invoice_id": "INV-9"},
            "round": 1,
            "execution_span_id": tool,
            "encoding": "openllmetry",
            "run_id": workflow,
        }
    ]
    assert stored.execution("requests.openllmetry.tool") == clean_row(
        tool_name="lookup_invoice",
        arguments={"invoice_id": "INV-9"},
        arguments_raw='{"args": [], "kwargs": {"invoice_id": "INV-9"}}',
        result={"amount": 120},
        call_id="call_O1",
        call_id_source="request",
        convention="traceloop",
        agent_path="billing",
        run_id=workflow,
    )


# --------------------------------------------------------------------------------------------------
# 11. Runs, tasks, teams
# --------------------------------------------------------------------------------------------------


def test_explicit_run_id_wins_over_the_agent_call_id(stored: Stored) -> None:
    assert stored.execution("runs.explicit") == pydantic_ai_row(
        stored,
        "runs.explicit",
        tool_name="classify_ticket",
        call_id="call_X1",
        arguments_raw='{"text": "printer on fire"}',
        agent_path="triage",
    ) | {"run_id": "eval-run-42"}


def test_team_member_execution_belongs_to_the_leaders_run(stored: Stored) -> None:
    assert stored.execution("runs.team.member_tool") == pydantic_ai_row(
        stored,
        "runs.team.member_tool",
        tool_name="web_search",
        call_id="call_T2",
        arguments_raw='{"q": "tides"}',
        agent_path="leader/member",
    ) | {"run_id": "team-run-1"}
    assert stored.execution("runs.team.leader_tool") == pydantic_ai_row(
        stored,
        "runs.team.leader_tool",
        tool_name="plan_research",
        call_id="call_T1",
        arguments_raw='{"topic": "tides"}',
        agent_path="leader",
    ) | {"run_id": "team-run-1"}


def test_task_id_from_the_resource(stored: Stored) -> None:
    assert stored.execution("runs.task") == pydantic_ai_row(
        stored,
        "runs.task",
        tool_name="lookup_shipping_cutoff",
        call_id="call_C1",
        arguments_raw='{"region": "north"}',
        agent_path="dispatcher",
        task_id=TASK_ID,
    ) | {"run_id": "pyd-run-task"}


def test_trace_with_no_agent_is_one_run(stored: Stored) -> None:
    # pydantic_ai_row's run id is the trace id.
    assert stored.execution("runs.no_agent") == pydantic_ai_row(
        stored, "runs.no_agent", tool_name="ping", call_id="call_Z1", arguments_raw="{}"
    )


# --------------------------------------------------------------------------------------------------
# 12. No convention
# --------------------------------------------------------------------------------------------------


def test_span_of_no_convention_is_stored_but_is_no_execution(stored: Stored) -> None:
    assert stored.span_names[stored.sent.trace_id("unknown")] == ["SELECT orders", "GET"]
    assert stored.executions_in_trace("unknown") == 0
    assert stored.requests_in_trace("unknown") == []

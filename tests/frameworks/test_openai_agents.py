"""The OpenAI Agents SDK, traced through OpenInference's processor, into a real `tracescore serve --specs`.

No LLM and no network. The SDK's own tracing is not OpenTelemetry: `OpenAIAgentsInstrumentor` registers a
`TracingProcessor` that turns SDK spans into OpenTelemetry spans. Before it is installed the SDK's
default processor (the batch exporter that uploads traces to OpenAI) is removed with
`set_trace_processors([])`, so nothing but OpenTelemetry sees a trace.

The models: the SDK's own `OpenAIResponsesModel` whose `AsyncOpenAI` client answers from a script
(`httpx.MockTransport`, no socket): each reply is a Responses API object asking for function calls with
fixed call ids, then text. That keeps the SDK's real `response` spans (the request side). One agent is
driven by the SDK's test double `agents.testing.ScriptedModel`, a `Model` implementation whose
`get_response` returns scripted function calls: it opens no response span, so that run has no requests.

Every span the SDK emits is also kept in memory: the ground truth. Runs, each under a harness span
naming its task (`tracescore.task.id`):

- oa:checkout: one clean tool and one that raises (the SDK reports it to the model; the span is ERROR).
- oa:handoff: a triage agent hands off to a refunds agent, which calls a tool.
- oa:as-tool: a manager calls a researcher agent as a tool; the researcher calls a tool.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("agents", reason="openai-agents is not installed (test extra)")
pytest.importorskip(
    "openinference.instrumentation.openai_agents", reason="openinference-instrumentation-openai-agents"
)

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_trace_processors
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tracing import get_trace_provider
from openai import AsyncOpenAI
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openinference.instrumentation import using_session
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests import _otel
from tests._otel import hex_span, hex_trace, stored_rows
from tests._server import ServeProcess

SERVICE = "openai-agents-shop"
SCOPE = "openinference.instrumentation.openai_agents"
TASK_CHECKOUT = "oa:checkout"
TASK_HANDOFF = "oa:handoff"
TASK_AS_TOOL = "oa:as-tool"
SESSION = "conversation-7"

SPECS = f"""
name: oa-checkout
select: {{task: {TASK_CHECKOUT}}}
expected_tools: [lookup_shipping_cutoff, charge_card]
arguments:
  lookup_shipping_cutoff: {{region: north}}
---
name: oa-handoff
select: {{task: {TASK_HANDOFF}}}
expected_tools: [refund_order]
arguments: {{refund_order: {{order_id: o-17}}}}
---
name: oa-handoff-strict
select: {{task: {TASK_HANDOFF}}}
expected_tools: [refund_order]
allow_additional: false
---
name: oa-handoff-named
select: {{task: {TASK_HANDOFF}}}
trajectory: {{mode: strict, tools: [transfer_to_refunds_agent, refund_order]}}
allow_additional: false
---
name: oa-handoff-forbidden
select: {{task: {TASK_HANDOFF}}}
expected_tools: [refund_order]
forbidden_tools: [transfer_to_refunds_agent]
---
name: oa-research
select: {{task: {TASK_AS_TOOL}}}
expected_tools: [search]
arguments: {{search: {{query: parcels}}}}
---
name: oa-research-leader
select: {{task: {TASK_AS_TOOL}}}
scope: leader
expected_tools: [search]
"""

# What a scripted model asks for: (tool name, arguments, call id), one list per model reply.
Turn = list[tuple[str, dict[str, Any], str]]

CHECKOUT_TURN: Turn = [
    ("lookup_shipping_cutoff", {"region": "north"}, "call_cutoff"),
    ("charge_card", {"amount": 12.5, "currency": "EUR"}, "call_charge"),
]
HANDOFF_TURN: Turn = [("transfer_to_refunds_agent", {}, "call_handoff")]
REFUND_TURN: Turn = [("refund_order", {"order_id": "o-17"}, "call_refund")]
SEARCH_TURN: Turn = [("search", {"query": "parcels", "limit": 5}, "call_search")]


def scripted_responses(turns: Sequence[Turn]) -> OpenAIResponsesModel:
    """The SDK's real Responses model, answered by a script through the client's HTTP transport."""
    queue = deque(turns)
    replies = iter(range(1, 100))

    def reply(request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/responses"), request.url
        n = next(replies)
        calls = queue.popleft() if queue else None
        output: list[Any]
        if calls:
            output = [
                ResponseFunctionToolCall(
                    id=f"fc_{call_id}",
                    call_id=call_id,
                    type="function_call",
                    name=name,
                    arguments=json.dumps(arguments),
                    status="completed",
                )
                for name, arguments, call_id in calls
            ]
        else:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            output = [
                ResponseOutputMessage(
                    id=f"msg_{n}", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        response = Response(
            id=f"resp_{n}",
            created_at=0,
            model="gpt-4o",
            object="response",
            output=output,
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
            status="completed",
        )
        return httpx.Response(200, json=json.loads(response.model_dump_json()))

    # openai 3.x is built on httpx2 and still takes an httpx client (older releases take only httpx).
    transport = httpx.AsyncClient(transport=httpx.MockTransport(reply))
    client = AsyncOpenAI(api_key="not-used", http_client=transport)  # type: ignore[arg-type]
    return OpenAIResponsesModel(model="gpt-4o", openai_client=client)


# --- the tools: plain Python functions ------------------------------------------------------------


@function_tool
def lookup_shipping_cutoff(region: str) -> str:
    """The last order time for same-day dispatch in a region."""
    return f"{region}: 15:00"


@function_tool
def charge_card(amount: float, currency: str) -> str:
    """Charge the customer's card."""
    raise RuntimeError("card declined")


@function_tool
def refund_order(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


@function_tool
def search(query: str, limit: int) -> str:
    """Search the parcel database."""
    return f"3 results for {query}"


# --- helpers --------------------------------------------------------------------------------------


@dataclass
class World:
    server: ServeProcess
    spec_file: Path
    spans: list[ReadableSpan]

    def one(self, name: str, **attributes: Any) -> ReadableSpan:
        found = [
            s
            for s in self.spans
            if s.name == name and all((s.attributes or {}).get(k) == v for k, v in attributes.items())
        ]
        assert len(found) == 1, (name, attributes, [s.name for s in self.spans])
        return found[0]

    def named(self, name: str) -> list[ReadableSpan]:
        return sorted((s for s in self.spans if s.name == name), key=lambda s: s.start_time or 0)

    @staticmethod
    def attr(span: ReadableSpan, key: str) -> Any:
        return (span.attributes or {})[key]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("openai-agents")
    spec_file = directory / "specs.yaml"
    spec_file.write_text(SPECS)
    server = ServeProcess(directory / "oa.duckdb", extra_args=("--specs", str(spec_file))).start()
    provider = _otel.provider(server, "grpc", service=SERVICE)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    set_trace_processors([])  # drop the SDK's default exporter (uploads to api.openai.com)
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        registered = get_trace_provider()._multi_processor._processors  # type: ignore[attr-defined]
        assert [type(p).__name__ for p in registered] == ["OpenInferenceTracingProcessor"]
        _drive(provider)
        assert provider.force_flush(10_000)
        spans = list(memory.get_finished_spans())
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
        server.stop()
    assert get_trace_provider()._multi_processor._processors == ()  # type: ignore[attr-defined]
    yield World(server, spec_file, spans)


def _drive(provider: Any) -> None:
    harness = provider.get_tracer("rollout-harness")

    def rollout(task: str) -> Any:
        return harness.start_as_current_span("rollout", attributes={"tracescore.task.id": task})

    shop = Agent(
        name="shop_agent",
        model=scripted_responses([CHECKOUT_TURN]),
        tools=[lookup_shipping_cutoff, charge_card],
    )
    with rollout(TASK_CHECKOUT):
        result = Runner.run_sync(shop, "Ship order o-17 north and charge the card.")
    assert result.final_output == "done"

    refunds = Agent(name="refunds_agent", model=scripted_responses([REFUND_TURN]), tools=[refund_order])
    triage = Agent(name="triage_agent", model=scripted_responses([HANDOFF_TURN]), handoffs=[refunds])
    # OpenInference's context attributes reach every span its processor opens: the session id, here.
    with rollout(TASK_HANDOFF), using_session(SESSION):
        result = Runner.run_sync(triage, "Refund order o-17.")
    assert result.final_output == "done" and result.last_agent is refunds

    researcher = Agent(name="researcher", model=scripted_responses([SEARCH_TURN]), tools=[search])
    manager_model = ScriptedModel(
        [
            [function_call("ask_researcher", {"input": "find parcels"}, call_id="call_ask")],
            [assistant_message("done")],
        ]
    )
    manager = Agent(
        name="manager",
        model=manager_model,
        tools=[researcher.as_tool(tool_name="ask_researcher", tool_description="Ask the researcher.")],
    )
    with rollout(TASK_AS_TOOL):
        result = Runner.run_sync(manager, "Find the parcels.")
    assert result.final_output == "done"
    manager_model.assert_complete()


EXECUTION_COLUMNS = (
    "run_id, task_id, trace_id, span_id, parent_span_id, tool_name, call_id, call_id_source, arguments, "
    "arguments_raw, arguments_error, result, error, error_type, error_message, paused, from_history, "
    "epoch_ns(start_time), epoch_ns(end_time), agent_path, agent_name, session_id, service_name, convention, "
    "scope_name, kind"
)


def _parent(span: ReadableSpan) -> str:
    assert span.parent is not None
    return format(span.parent.span_id, "016x")


def test_the_workflow_span_is_not_an_agent(world: World) -> None:
    """The processor opens one AGENT span per SDK trace above the agents (named after the trace, no
    `agent.name`); tracescore does not count it as an agent, so paths start at the agent."""
    named = world.named("Agent workflow")
    workflows = [s for s in named if world.attr(s, "openinference.span.kind") == "AGENT"]
    assert len(workflows) == 3
    for workflow in workflows:
        assert "agent.name" not in (workflow.attributes or {})
        assert workflow.instrumentation_scope is not None and workflow.instrumentation_scope.name == SCOPE
    paths = stored_rows(world.server, "SELECT DISTINCT agent_path FROM executions ORDER BY 1")
    assert [row["agent_path"] for row in paths] == [
        "manager",
        "manager/researcher",
        "refunds_agent",
        "shop_agent",
        "triage_agent",
    ]


def test_openai_agents_tool_spans_land_as_exact_executions(world: World) -> None:
    def expected(
        span: ReadableSpan,
        *,
        task: str,
        agent_path: str,
        result: Any,
        call_id: str | None,
        arguments: Any,
        error_message: str | None = None,
        session: str | None = None,
        tool_name: str | None = None,
        kind: str = "tool",
    ) -> dict[str, Any]:
        return {
            # No run id is exported: one SDK trace is one run, keyed by its trace id.
            "run_id": hex_trace(span),
            "task_id": task,
            "trace_id": hex_trace(span),
            "span_id": hex_span(span),
            "parent_span_id": _parent(span),
            "tool_name": tool_name or span.name,
            "call_id": call_id,
            "call_id_source": "request" if call_id else None,  # never on the tool span itself
            "arguments": arguments,
            "arguments_raw": None if arguments is None else world.attr(span, "input.value"),
            "arguments_error": None,
            "result": result,
            "error": error_message is not None,
            "error_type": None,  # the SDK handles the exception: status ERROR, no exception event
            "error_message": error_message,
            "paused": False,
            "from_history": False,
            "epoch_ns(start_time)": span.start_time,
            "epoch_ns(end_time)": span.end_time,
            "agent_path": agent_path,
            "agent_name": agent_path.rsplit("/", 1)[-1],
            "session_id": session,
            "service_name": SERVICE,
            "convention": "openinference",
            "scope_name": SCOPE,
            "kind": kind,
        }

    charge = world.one("charge_card")
    assert charge.status.status_code.name == "ERROR" and not charge.events
    handoff = world.one("handoff to refunds_agent")
    # The processor's handoff span: the agents' names, no tool name, no arguments.
    assert dict(handoff.attributes or {}) == {
        "openinference.span.kind": "TOOL",
        "input.value": "triage_agent",
        "output.value": "refunds_agent",
        "session.id": SESSION,
    }
    redacted = (
        "Error running tool (non-fatal): {'tool_name': 'charge_card', "
        "'error': 'Tool execution failed. Error details are redacted.'}"
    )
    expected_rows = [
        expected(
            world.one("lookup_shipping_cutoff"),
            task=TASK_CHECKOUT,
            agent_path="shop_agent",
            result="north: 15:00",
            call_id="call_cutoff",
            arguments={"region": "north"},
        ),
        expected(
            charge,
            task=TASK_CHECKOUT,
            agent_path="shop_agent",
            # What the SDK told the model, and (default failure_error_function) a redacted error.
            result="An error occurred while running the tool. Please try again.",
            call_id="call_charge",
            arguments={"amount": 12.5, "currency": "EUR"},
            error_message=redacted,
        ),
        # The handoff: an execution of the tool the model called (`transfer_to_refunds_agent`, the SDK's
        # default handoff tool name), so the request joins it and gives it its call id; `{}` arguments
        # are not exported, so none are stored. Its result is the agent that took over.
        expected(
            handoff,
            task=TASK_HANDOFF,
            agent_path="triage_agent",
            result="refunds_agent",
            call_id="call_handoff",
            arguments=None,
            session=SESSION,
            tool_name="transfer_to_refunds_agent",
            kind="handoff",
        ),
        # After the handoff the refunds agent is a top-level agent of the same run, not a member.
        expected(
            world.one("refund_order"),
            task=TASK_HANDOFF,
            agent_path="refunds_agent",
            result="refunded o-17",
            call_id="call_refund",
            arguments={"order_id": "o-17"},
            session=SESSION,
        ),
        # The manager's model is the SDK's ScriptedModel: no response span, so no call id to recover.
        expected(
            world.one("ask_researcher"),
            task=TASK_AS_TOOL,
            agent_path="manager",
            result="done",
            call_id=None,
            arguments={"input": "find parcels"},
        ),
        # An agent used as a tool runs inside the tool's span: a member of the manager.
        expected(
            world.one("search"),
            task=TASK_AS_TOOL,
            agent_path="manager/researcher",
            result="3 results for parcels",
            call_id="call_search",
            arguments={"query": "parcels", "limit": 5},
        ),
    ]
    rows = stored_rows(world.server, f"SELECT {EXECUTION_COLUMNS} FROM executions ORDER BY start_time")
    for row in rows:
        for key in ("arguments", "result"):
            row[key] = None if row[key] is None else json.loads(row[key])
    # Parallel tool calls may start in either order; compare by span.
    assert {row["span_id"]: row for row in rows} == {row["span_id"]: row for row in expected_rows}
    assert len(rows) == len(expected_rows)


def test_openai_agents_requests_and_runs(world: World) -> None:
    responses = world.named("response")
    # Per Responses-model agent a call turn and a text turn; the triage agent only hands off.
    assert len(responses) == 7
    requests = stored_rows(
        world.server,
        "SELECT run_id, span_id, position, tool_name, call_id, arguments, round, agent_path, "
        "execution_span_id FROM tool_requests ORDER BY requested_at, position",
    )
    for row in requests:
        row["arguments"] = None if row["arguments"] is None else json.loads(row["arguments"])
    asked = "llm.output_messages.0.message.tool_calls.0.tool_call.id"
    checkout_response, handoff_response, refund_response, search_response = (
        s for s in responses if asked in (s.attributes or {})
    )
    assert requests == [
        {
            "run_id": hex_trace(response),
            "span_id": hex_span(response),
            "position": position,
            "tool_name": name,
            "call_id": call_id,
            "arguments": arguments,
            "round": round_,
            "agent_path": path,
            "execution_span_id": hex_span(executed) if executed is not None else None,
        }
        for response, position, name, arguments, call_id, round_, path, executed in (
            (checkout_response, 0, *CHECKOUT_TURN[0], 1, "shop_agent", world.one("lookup_shipping_cutoff")),
            (checkout_response, 1, *CHECKOUT_TURN[1], 1, "shop_agent", world.one("charge_card")),
            # The model asked for `transfer_to_refunds_agent` (no arguments exported for `{}`); the span
            # `handoff to refunds_agent` is stored under that name, so the request joins it.
            (
                handoff_response,
                0,
                "transfer_to_refunds_agent",
                None,
                "call_handoff",
                1,
                "triage_agent",
                world.one("handoff to refunds_agent"),
            ),
            (refund_response, 0, *REFUND_TURN[0], 2, "refunds_agent", world.one("refund_order")),
            (search_response, 0, *SEARCH_TURN[0], 1, "manager/researcher", world.one("search")),
        )
    ]

    runs = stored_rows(
        world.server,
        "SELECT run_id, n_traces, task_id, service_name, agent_name, session_id, root_span_id, n_executions, "
        "n_requests, status FROM runs ORDER BY start_time",
    )
    shop, triage, manager = world.one("shop_agent"), world.one("triage_agent"), world.one("manager")
    rollouts = world.named("rollout")
    assert runs == [
        {
            "run_id": hex_trace(shop),
            "n_traces": 1,
            "task_id": TASK_CHECKOUT,
            "service_name": SERVICE,
            "agent_name": "shop_agent",
            "session_id": None,
            "root_span_id": hex_span(shop),
            "n_executions": 2,
            "n_requests": 2,
            "status": "complete",
        },
        # A handoff chain has no single outermost agent: no agent name, the trace's root is the root.
        {
            "run_id": hex_trace(triage),
            "n_traces": 1,
            "task_id": TASK_HANDOFF,
            "service_name": SERVICE,
            "agent_name": None,
            "session_id": SESSION,
            "root_span_id": hex_span(rollouts[1]),
            "n_executions": 2,
            "n_requests": 2,
            "status": "complete",
        },
        {
            "run_id": hex_trace(manager),
            "n_traces": 1,
            "task_id": TASK_AS_TOOL,
            "service_name": SERVICE,
            "agent_name": "manager",
            "session_id": None,
            "root_span_id": hex_span(manager),
            "n_executions": 2,
            "n_requests": 1,
            "status": "complete",
        },
    ]


def test_openai_agents_runs_are_scored_online_with_the_spec(world: World) -> None:
    rows = stored_rows(world.server, "SELECT verdict FROM verdicts")
    verdicts = {(v["task"], v["spec"]): v for v in (json.loads(row["verdict"]) for row in rows)}
    assert sorted(verdicts) == [
        (TASK_AS_TOOL, "oa-research"),
        (TASK_AS_TOOL, "oa-research-leader"),
        (TASK_CHECKOUT, "oa-checkout"),
        (TASK_HANDOFF, "oa-handoff"),
        (TASK_HANDOFF, "oa-handoff-forbidden"),
        (TASK_HANDOFF, "oa-handoff-named"),
        (TASK_HANDOFF, "oa-handoff-strict"),
    ]
    assert {v["run_version"] for v in verdicts.values()} == {1}

    checkout = verdicts[(TASK_CHECKOUT, "oa-checkout")]
    assert (checkout["passed"], checkout["value"]) == (False, pytest.approx(2 / 3))
    assert checkout["missing_tools"] == ["charge_card (errored)"]
    assert checkout["reason"] == "expected tool charge_card has no clean execution (errored)"

    # A spec that names no handoff does not see it: not an additional tool, not in the reconciliation.
    handoff = verdicts[(TASK_HANDOFF, "oa-handoff")]
    assert (handoff["passed"], handoff["value"], handoff["reason"]) == (True, 1.0, None)
    assert handoff["additional_tools"] == []
    counts = handoff["detail"]["reconciliation"]["counts"]
    assert counts["clean"] == 1
    assert (counts["requested_never_executed"], counts["executed_without_request"]) == (0, 0)
    strict = verdicts[(TASK_HANDOFF, "oa-handoff-strict")]
    assert (strict["passed"], strict["value"], strict["reason"]) == (True, 1.0, None)
    # A spec that names the handoff sees it like any tool: here, in order before the refund.
    named = verdicts[(TASK_HANDOFF, "oa-handoff-named")]
    assert (named["passed"], named["value"], named["reason"]) == (True, 1.0, None)
    assert named["detail"]["reconciliation"]["counts"]["clean"] == 2
    forbidden = verdicts[(TASK_HANDOFF, "oa-handoff-forbidden")]
    assert forbidden["passed"] is False
    assert "transfer_to_refunds_agent" in forbidden["reason"]

    everyone = verdicts[(TASK_AS_TOOL, "oa-research")]
    assert (everyone["passed"], everyone["value"], everyone["reason"]) == (True, 1.0, None)
    leader = verdicts[(TASK_AS_TOOL, "oa-research-leader")]
    assert (leader["passed"], leader["value"]) == (False, 0.0)
    assert leader["missing_tools"] == ["search"]
    # Only the researcher's own call is a member execution; the manager's ask_researcher is the leader's.
    assert leader["reason"] == (
        "expected tool search has no clean execution; 1 member execution(s) left out (scope: leader)"
    )

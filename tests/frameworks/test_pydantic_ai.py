"""A real agent framework driving tracescore end to end: pydantic-ai, no LLM, no network.

pydantic-ai's `FunctionModel` scripts exactly which tools the "model" calls with which arguments; the
tools are plain Python functions; pydantic-ai's own instrumentation (default data format, version 5,
content capture on) emits the spans through the real OTLP exporter to a real `tracescore serve`.
Every span the SDK emits is also kept in memory: that is the ground truth the stored rows must match.

Three agent runs, each under a harness span that names its task (`tracescore.task.id`):

- checkout: one clean tool, one whose argument validation fails (the tool never runs), one that
  raises `ModelRetry`; then one that raises `ApprovalRequired`, one that raises `CallDeferred`, and
  one declared `requires_approval=True` (pydantic-ai opens no span for it: request side only).
  The run ends paused with `DeferredToolRequests`.
- checkout-approved: the same conversation resumed with the approval granted: the tool now runs.
- track-parcel: the agent delegates to a second agent whose tool raises; the exception ends both runs.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from typing import Any

import pydantic
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

from tests import _otel
from tests._otel import hex_span, hex_trace, stored_rows
from tests._server import ServeProcess

SERVICE = "shop-agent"
SCOPE = "pydantic-ai"
TASK_CHECKOUT = "checkout"
TASK_APPROVED = "checkout-approved"
TASK_TRACK = "track-parcel"

# What the scripted model asks for: (tool name, arguments, tool call id), one list per model response.
Turn = list[tuple[str, dict[str, Any], str]]

CHECKOUT_TURNS: list[Turn] = [
    [
        ("lookup_shipping_cutoff", {"region": "north"}, "call-cutoff"),
        ("quote_shipping", {"region": "south", "weight_kg": "heavy"}, "call-quote"),
        ("reserve_stock", {"sku": "A1"}, "call-reserve"),
    ],
    [
        ("charge_card", {"amount": 12.5, "currency": "EUR"}, "call-charge"),
        ("ask_courier", {"question": "Can you collect today?"}, "call-courier"),
        ("refund_order", {"order_id": "o-17"}, "call-refund"),
    ],
]
DELEGATE_TURN: Turn = [("delegate_tracking", {"parcel": "P9"}, "call-delegate")]
TRACK_TURN: Turn = [("track_parcel", {"parcel": "P9"}, "call-track")]


class ScriptedModel:
    """A `FunctionModel` whose responses are queued per run: tool calls first, then plain text."""

    def __init__(self) -> None:
        self.turns: deque[Turn] = deque()
        self.model = FunctionModel(self._respond)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not self.turns:
            return ModelResponse(parts=[TextPart("done")])
        calls = self.turns.popleft()
        return ModelResponse(
            parts=[ToolCallPart(name, args, tool_call_id=call_id) for name, args, call_id in calls]
        )


def build_agents(
    settings: InstrumentationSettings,
) -> tuple[Agent[None, str | DeferredToolRequests], ScriptedModel]:
    shop_model, courier_model = ScriptedModel(), ScriptedModel()
    shop: Agent[None, str | DeferredToolRequests] = Agent(
        shop_model.model,
        name="shop_agent",
        output_type=[str, DeferredToolRequests],
        capabilities=[Instrumentation(settings=settings)],
    )
    courier: Agent[None, str] = Agent(
        courier_model.model, name="courier_agent", capabilities=[Instrumentation(settings=settings)]
    )

    @shop.tool_plain
    def lookup_shipping_cutoff(region: str) -> str:
        return f"{region}: 15:00"

    @shop.tool_plain
    def quote_shipping(region: str, weight_kg: float) -> float:
        raise AssertionError("argument validation fails: the tool never runs")

    @shop.tool_plain
    def reserve_stock(sku: str) -> str:
        raise ModelRetry(f"sku {sku} is not stocked")

    @shop.tool
    def charge_card(ctx: RunContext[None], amount: float, currency: str) -> str:
        if not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"amount": amount})
        return f"charged {amount} {currency}"

    @shop.tool_plain
    def ask_courier(question: str) -> str:
        raise CallDeferred(metadata={"question": question})

    @shop.tool_plain(requires_approval=True)
    def refund_order(order_id: str) -> str:
        raise AssertionError("the refund is denied: the tool never runs")

    @shop.tool_plain
    async def delegate_tracking(parcel: str) -> str:
        courier_model.turns.append(TRACK_TURN)
        return (await courier.run(f"track {parcel}")).output

    @courier.tool_plain
    def track_parcel(parcel: str) -> str:
        raise RuntimeError(f"tracking service down for {parcel}")

    return shop, shop_model


def _hex_parent(span: ReadableSpan) -> str | None:
    return format(span.parent.span_id, "016x") if span.parent is not None else None


class Emitted:
    """The spans pydantic-ai handed to the SDK (the ground truth), with lookups by what tests know."""

    def __init__(self, spans: Sequence[ReadableSpan]) -> None:
        self.spans = list(spans)

    def one(self, name: str, attributes: dict[str, Any] | None = None) -> ReadableSpan:
        wanted = attributes or {}
        found = [
            s
            for s in self.spans
            if s.name == name and all((s.attributes or {}).get(k) == v for k, v in wanted.items())
        ]
        assert len(found) == 1, (name, attributes, [s.name for s in self.spans])
        return found[0]

    def attr(self, span: ReadableSpan, key: str) -> Any:
        return (span.attributes or {})[key]

    def in_trace(self, trace_id: str) -> list[ReadableSpan]:
        return [s for s in self.spans if hex_trace(s) == trace_id]


def _validation_message() -> str:
    """The exact message pydantic raises for the bad `quote_shipping` arguments."""
    model = pydantic.create_model("quote_shipping", region=(str, ...), weight_kg=(float, ...))
    with pytest.raises(pydantic.ValidationError) as caught:
        model.model_validate({"region": "south", "weight_kg": "heavy"})
    return str(caught.value)


EXECUTION_COLUMNS = (
    "run_id, task_id, trace_id, span_id, parent_span_id, tool_name, call_id, call_id_source, "
    "arguments, arguments_raw, arguments_error, result, error, error_type, error_message, paused, "
    "pause_reason, from_history, epoch_ns(start_time), epoch_ns(end_time), agent_path, agent_name, "
    "session_id, service_name, convention, scope_name"
)
REQUEST_COLUMNS = (
    "run_id, task_id, trace_id, span_id, position, tool_name, call_id, arguments, arguments_raw, "
    "round, epoch_ns(requested_at), agent_path, encoding, execution_span_id"
)


def _json(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def run_scenario(server: ServeProcess, protocol: str) -> Emitted:
    """Drive the three agent runs through pydantic-ai; return the spans it emitted."""
    provider: TracerProvider = _otel.provider(server, protocol, service=SERVICE)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    assert settings.version == 5  # the default data format
    harness = provider.get_tracer("rollout-harness")
    shop, shop_model = build_agents(settings)

    shop_model.turns.extend(CHECKOUT_TURNS)
    with harness.start_as_current_span("rollout", attributes={"tracescore.task.id": TASK_CHECKOUT}):
        paused = shop.run_sync("Ship order o-17 to the south, charge the card.")
    assert isinstance(paused.output, DeferredToolRequests)
    assert [c.tool_call_id for c in paused.output.approvals] == ["call-charge", "call-refund"]
    assert [c.tool_call_id for c in paused.output.calls] == ["call-courier"]

    with harness.start_as_current_span("rollout", attributes={"tracescore.task.id": TASK_APPROVED}):
        resumed = shop.run_sync(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(
                approvals={"call-charge": True, "call-refund": False},
                calls={"call-courier": "tomorrow 09:00"},
            ),
        )
    assert resumed.output == "done"

    shop_model.turns.append(DELEGATE_TURN)
    with (
        pytest.raises(RuntimeError, match="tracking service down for P9"),
        harness.start_as_current_span("rollout", attributes={"tracescore.task.id": TASK_TRACK}),
    ):
        shop.run_sync("Where is parcel P9?")

    assert provider.force_flush(10_000)
    emitted = Emitted(memory.get_finished_spans())
    provider.shutdown()
    return emitted


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_pydantic_ai_agent_runs_land_as_exact_rows(server: ServeProcess, protocol: str) -> None:
    emitted = run_scenario(server, protocol)
    assert server.stop() == 0, server.log()

    # --- the runs, from the SDK's own spans -------------------------------------------------------
    roots = [s for s in emitted.spans if s.name == "invoke_agent shop_agent"]
    assert len(roots) == 3
    checkout_root, approved_root, track_root = sorted(roots, key=lambda s: s.start_time or 0)
    courier_root = emitted.one("invoke_agent courier_agent")
    run_of = {
        label: str(emitted.attr(root, "gen_ai.agent.call.id"))
        for label, root in (
            ("checkout", checkout_root),
            ("approved", approved_root),
            ("track", track_root),
            ("courier", courier_root),
        )
    }
    assert len(set(run_of.values())) == 4
    session = {
        label: str(emitted.attr(root, "gen_ai.conversation.id"))
        for label, root in (("checkout", checkout_root), ("approved", approved_root), ("track", track_root))
    }
    session["courier"] = str(emitted.attr(courier_root, "gen_ai.conversation.id"))
    assert session["checkout"] == session["approved"]  # one conversation, resumed

    def tool_span(tool: str, call_id: str, run: str) -> ReadableSpan:
        return emitted.one(
            f"execute_tool {tool}",
            {"gen_ai.tool.call.id": call_id, "gen_ai.agent.call.id": run_of[run]},
        )

    def chat_span(run: str, first_call_id: str) -> ReadableSpan:
        found = [
            s
            for s in emitted.spans
            if s.name == "chat function:_respond:"
            and (s.attributes or {}).get("gen_ai.agent.call.id") == run_of[run]
            and f'"id":"{first_call_id}"' in str((s.attributes or {}).get("gen_ai.output.messages"))
        ]
        assert len(found) == 1, [s.name for s in emitted.spans]
        return found[0]

    def expected_execution(
        span: ReadableSpan,
        *,
        run: str,
        task: str,
        arguments: dict[str, Any],
        result: Any,
        error_type: str | None = None,
        error_message: str | None = None,
        pause_reason: str | None = None,
        agent_path: str = "shop_agent",
        session_run: str | None = None,
    ) -> dict[str, Any]:
        attrs = span.attributes or {}
        return {
            "run_id": run_of[run],
            "task_id": task,
            "trace_id": hex_trace(span),
            "span_id": hex_span(span),
            "parent_span_id": _hex_parent(span),
            "tool_name": attrs["gen_ai.tool.name"],
            "call_id": attrs["gen_ai.tool.call.id"],
            "call_id_source": "span",
            "arguments": arguments,
            "arguments_raw": attrs["gen_ai.tool.call.arguments"],
            "arguments_error": None,
            "result": result,
            "error": error_type is not None,
            "error_type": error_type,
            "error_message": error_message,
            "paused": pause_reason is not None,
            "pause_reason": pause_reason,
            "from_history": False,
            "epoch_ns(start_time)": span.start_time,
            "epoch_ns(end_time)": span.end_time,
            "agent_path": agent_path,
            "agent_name": agent_path.rsplit("/", 1)[-1],
            "session_id": session[session_run or run],
            "service_name": SERVICE,
            "convention": "gen_ai",
            "scope_name": SCOPE,
        }

    (cutoff_args, quote_args, reserve_args), (charge_args, courier_args, refund_args) = (
        [args for _, args, _ in turn] for turn in CHECKOUT_TURNS
    )
    cutoff = tool_span("lookup_shipping_cutoff", "call-cutoff", "checkout")
    quote = tool_span("quote_shipping", "call-quote", "checkout")
    reserve = tool_span("reserve_stock", "call-reserve", "checkout")
    charge_paused = tool_span("charge_card", "call-charge", "checkout")
    courier_call = tool_span("ask_courier", "call-courier", "checkout")
    charge_done = tool_span("charge_card", "call-charge", "approved")
    delegate = tool_span("delegate_tracking", "call-delegate", "track")
    track = tool_span("track_parcel", "call-track", "courier")
    # `requires_approval=True` tools, denied approvals and externally supplied results open no span.
    assert not [s for s in emitted.spans if s.name == "execute_tool refund_order"]
    assert len([s for s in emitted.spans if s.name.startswith("execute_tool ")]) == 8

    # What pydantic-ai itself put on the spans that decide error and pause (so a change upstream shows here).
    assert emitted.attr(quote, "pydantic_ai.tool.failure_stage") == "validation"
    assert emitted.attr(charge_paused, "pydantic_ai.tool.deferral.name") == "ApprovalRequired"
    assert emitted.attr(courier_call, "pydantic_ai.tool.deferral.name") == "CallDeferred"
    for deferred in (charge_paused, courier_call):
        assert deferred.status.is_unset and not deferred.events  # version 5: a deferral is not an error
    assert "pydantic_ai.tool.deferral.name" not in (charge_done.attributes or {})

    tracking_down = "tracking service down for P9"
    expected = [
        expected_execution(
            cutoff, run="checkout", task=TASK_CHECKOUT, arguments=cutoff_args, result="north: 15:00"
        ),
        expected_execution(
            quote,
            run="checkout",
            task=TASK_CHECKOUT,
            arguments=quote_args,
            # The retry prompt pydantic-ai sends back, recorded as the result.
            result=[
                {
                    "type": "float_parsing",
                    "loc": ["weight_kg"],
                    "msg": "Input should be a valid number, unable to parse string as a number",
                    "input": "heavy",
                }
            ],
            error_type="validation_failed",
            error_message=_validation_message(),
        ),
        expected_execution(
            reserve,
            run="checkout",
            task=TASK_CHECKOUT,
            arguments=reserve_args,
            result="sku A1 is not stocked",
            error_type="pydantic_ai.exceptions.ToolRetryError",
            error_message="sku A1 is not stocked",
        ),
        expected_execution(
            charge_paused,
            run="checkout",
            task=TASK_CHECKOUT,
            arguments=charge_args,
            result=None,
            pause_reason="confirmation",
        ),
        expected_execution(
            courier_call,
            run="checkout",
            task=TASK_CHECKOUT,
            arguments=courier_args,
            result=None,
            pause_reason="external_execution",
        ),
        expected_execution(
            charge_done,
            run="approved",
            task=TASK_APPROVED,
            arguments=charge_args,
            result="charged 12.5 EUR",
        ),
        expected_execution(
            delegate,
            run="track",
            task=TASK_TRACK,
            arguments={"parcel": "P9"},
            result=None,
            error_type="RuntimeError",
            error_message=tracking_down,
        ),
        # The member agent's execution belongs to the leader's run (the outermost agent), with its path.
        expected_execution(
            track,
            run="track",
            task=TASK_TRACK,
            arguments={"parcel": "P9"},
            result=None,
            error_type="RuntimeError",
            error_message=tracking_down,
            agent_path="shop_agent/courier_agent",
            session_run="courier",
        ),
    ]
    executions = stored_rows(server, f"SELECT {EXECUTION_COLUMNS} FROM executions")
    for row in executions:
        row["arguments"], row["result"] = _json(row["arguments"]), _json(row["result"])
    by_span = {row["span_id"]: row for row in executions}
    assert len(by_span) == len(executions) == len(expected)
    for want in expected:
        assert by_span.get(want["span_id"]) == want, want["tool_name"]

    # Run grouping: each agent run's executions share one run id, its invoke_agent's gen_ai.agent.call.id.
    grouped = stored_rows(
        server,
        "SELECT run_id, task_id, list(call_id ORDER BY call_id) AS calls FROM executions "
        "GROUP BY run_id, task_id ORDER BY task_id",
    )
    assert grouped == [
        {
            "run_id": run_of["checkout"],
            "task_id": TASK_CHECKOUT,
            "calls": ["call-charge", "call-courier", "call-cutoff", "call-quote", "call-reserve"],
        },
        {"run_id": run_of["approved"], "task_id": TASK_APPROVED, "calls": ["call-charge"]},
        {"run_id": run_of["track"], "task_id": TASK_TRACK, "calls": ["call-delegate", "call-track"]},
    ]

    # --- request side: every tool call the scripted model asked for, on its chat span --------------
    def expected_request(
        chat: ReadableSpan,
        position: int,
        tool: str,
        call_id: str,
        arguments: dict[str, Any],
        *,
        run: str,
        task: str,
        round_: int,
        executed_by: ReadableSpan | None,
        agent_path: str = "shop_agent",
    ) -> dict[str, Any]:
        return {
            "run_id": run_of[run],
            "task_id": task,
            "trace_id": hex_trace(chat),
            "span_id": hex_span(chat),
            "position": position,
            "tool_name": tool,
            "call_id": call_id,
            "arguments": arguments,
            "arguments_raw": None,  # structured inside gen_ai.output.messages, no text to keep
            "round": round_,
            "epoch_ns(requested_at)": chat.end_time,
            "agent_path": agent_path,
            "encoding": "gen_ai",
            "execution_span_id": hex_span(executed_by) if executed_by is not None else None,
        }

    first_chat = chat_span("checkout", "call-cutoff")
    second_chat = chat_span("checkout", "call-charge")
    expected_requests = [
        expected_request(
            first_chat, i, tool, call_id, args, run="checkout", task=TASK_CHECKOUT, round_=1, executed_by=span
        )
        for i, ((tool, args, call_id), span) in enumerate(
            zip(CHECKOUT_TURNS[0], (cutoff, quote, reserve), strict=True)
        )
    ]
    expected_requests += [
        expected_request(
            second_chat,
            i,
            tool,
            call_id,
            args,
            run="checkout",
            task=TASK_CHECKOUT,
            round_=2,
            executed_by=span,
        )
        for i, ((tool, args, call_id), span) in enumerate(
            zip(CHECKOUT_TURNS[1], (charge_paused, courier_call, None), strict=True)
        )
    ]
    expected_requests += [
        expected_request(
            chat_span("track", "call-delegate"),
            0,
            "delegate_tracking",
            "call-delegate",
            {"parcel": "P9"},
            run="track",
            task=TASK_TRACK,
            round_=1,
            executed_by=delegate,
        ),
        expected_request(
            chat_span("courier", "call-track"),
            0,
            "track_parcel",
            "call-track",
            {"parcel": "P9"},
            run="track",
            task=TASK_TRACK,
            round_=2,
            executed_by=track,
            agent_path="shop_agent/courier_agent",
        ),
    ]
    requests = stored_rows(
        server, f"SELECT {REQUEST_COLUMNS} FROM tool_requests ORDER BY requested_at, position"
    )
    for row in requests:
        row["arguments"] = _json(row["arguments"])
    assert requests == expected_requests
    # The refund was requested and never executed: the request side is the only evidence of it.
    assert requests[5]["tool_name"] == "refund_order" and requests[5]["arguments"] == refund_args
    # Call ids tie both sides together: every execution but the resumed one answers a request of its run.
    linked = stored_rows(
        server,
        "SELECT e.tool_name, e.call_id, r.span_id IS NOT NULL AS requested FROM executions e "
        "LEFT JOIN tool_requests r ON r.run_id = e.run_id AND r.call_id = e.call_id "
        "AND r.execution_span_id = e.span_id",
    )
    assert sorted((row["call_id"], row["requested"]) for row in linked) == [
        ("call-charge", False),  # run checkout-approved: requested in the paused run before it
        ("call-charge", True),
        ("call-courier", True),
        ("call-cutoff", True),
        ("call-delegate", True),
        ("call-quote", True),
        ("call-reserve", True),
        ("call-track", True),
    ]

    # --- runs: one per agent run, the harness span and the member agent inside the leader's ------------
    runs = stored_rows(
        server,
        "SELECT run_id, trace_id, task_id, service_name, agent_name, session_id, root_span_id, n_spans, "
        "n_executions, n_requests, status FROM runs ORDER BY start_time",
    )
    assert runs == [
        {
            "run_id": run_of[label],
            "trace_id": hex_trace(root),
            "task_id": task,
            "service_name": SERVICE,
            "agent_name": "shop_agent",
            "session_id": session[label],
            "root_span_id": hex_span(root),
            "n_spans": len(emitted.in_trace(hex_trace(root))),
            "n_executions": n_executions,
            "n_requests": n_requests,
            "status": "complete",
        }
        for label, root, task, n_executions, n_requests in (
            ("checkout", checkout_root, TASK_CHECKOUT, 5, 6),
            ("approved", approved_root, TASK_APPROVED, 1, 0),
            ("track", track_root, TASK_TRACK, 2, 2),
        )
    ]
    assert server.query("SELECT count(*) FROM spans") == [(len(emitted.spans),)]

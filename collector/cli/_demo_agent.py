"""A small shop assistant for `tracescore demo`: real tools, real OpenTelemetry spans, no LLM.

The "model" is a scripted policy: each rollout says which tools the model asks for and with which
arguments, the way an LLM's tool calls would; the agent then really runs the tools and records every
step with the OpenTelemetry GenAI conventions (invoke_agent → chat → execute_tool). This is also the
reference for instrumenting an agent by hand with only opentelemetry-sdk.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Status, StatusCode, Tracer


class ApprovalRequired(Exception):
    """The tool needs a person's confirmation before it runs."""


class UpstreamTimeout(Exception):
    pass


def lookup_shipping_cutoff(region: str) -> str:
    cutoffs = {"north": "15:00", "south": "13:30"}
    if region not in cutoffs:
        raise UpstreamTimeout(f"carrier API timed out for region {region!r}")
    return cutoffs[region]


def quote_shipping(region: str, service: str) -> dict[str, Any]:
    return {"region": region, "service": service, "price_eur": 4.9 if service == "standard" else 9.9}


def check_stock(sku: str, slow: bool = False) -> int:
    if slow:
        time.sleep(0.35)  # a cold cache: the latency check should notice
    return 12 if sku.startswith("SKU") else 0


def refund_order(order_id: str, approved: bool = False) -> str:
    if not approved:
        raise ApprovalRequired(f"refund of {order_id} needs a person's approval")
    return f"refund of {order_id} issued"


def send_marketing_email(to: str) -> str:
    return f"queued newsletter for {to}"


TOOLS: dict[str, Callable[..., Any]] = {
    "lookup_shipping_cutoff": lookup_shipping_cutoff,
    "quote_shipping": quote_shipping,
    "check_stock": check_stock,
    "refund_order": refund_order,
    "send_marketing_email": send_marketing_email,
}


@dataclass(frozen=True)
class Rollout:
    task: str
    story: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


ROLLOUTS: list[Rollout] = [
    Rollout(
        "same-day-dispatch",
        "asks the right questions",
        [
            ("lookup_shipping_cutoff", {"region": "north"}),
            ("quote_shipping", {"region": "north", "service": "priority"}),
        ],
    ),
    Rollout(
        "same-day-dispatch",
        "quotes the wrong service (argument mismatch)",
        [
            ("lookup_shipping_cutoff", {"region": "north"}),
            ("quote_shipping", {"region": "north", "service": "standard"}),
        ],
    ),
    Rollout(
        "same-day-dispatch",
        "also sends a newsletter (strict-mode violation)",
        [
            ("lookup_shipping_cutoff", {"region": "north"}),
            ("quote_shipping", {"region": "north", "service": "priority"}),
            ("send_marketing_email", {"to": "customer@example.com"}),
        ],
    ),
    Rollout(
        "same-day-dispatch",
        "carrier API fails (errored call)",
        [
            ("lookup_shipping_cutoff", {"region": "east"}),
            ("quote_shipping", {"region": "north", "service": "priority"}),
        ],
    ),
    Rollout("stock-check", "fast answer", [("check_stock", {"sku": "SKU-1"})]),
    Rollout("stock-check", "fast answer", [("check_stock", {"sku": "SKU-2"})]),
    Rollout("stock-check", "cold cache (slow tool)", [("check_stock", {"sku": "SKU-3", "slow": True})]),
    Rollout("refund", "waits for approval (paused call)", [("refund_order", {"order_id": "A-1001"})]),
    Rollout("refund", "approved by a person", [("refund_order", {"order_id": "A-1002", "approved": True})]),
    Rollout("refund", "waits for approval (paused call)", [("refund_order", {"order_id": "A-1003"})]),
]


def _tool_call_parts(calls: list[tuple[str, dict[str, Any], str]]) -> str:
    parts = [
        {"type": "tool_call", "id": call_id, "name": name, "arguments": args} for name, args, call_id in calls
    ]
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}])


def _execute(tracer: Tracer, name: str, arguments: dict[str, Any], call_id: str) -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
    }
    with tracer.start_as_current_span(
        f"execute_tool {name}", attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            result = TOOLS[name](**arguments)
        except ApprovalRequired:
            # No semantic convention exists for a paused call yet: tracescore's own attributes say it.
            span.set_attribute("tracescore.tool.paused", True)
            span.set_attribute("tracescore.tool.pause_reason", "confirmation")
            return
        except Exception as exc:
            span.record_exception(exc)
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            return
        span.set_attribute("gen_ai.tool.call.result", json.dumps(result))


def run_agent(tracer: Tracer, rollout: Rollout) -> str:
    """One agent run: the model asks for tools (a chat span), the agent runs them (execute_tool spans).
    Returns the run's trace id (hex), by which its verdicts are known."""
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "shop-assistant",
        "gen_ai.agent.call.id": str(uuid.uuid4()),
        "tracescore.task.id": rollout.task,
    }
    with tracer.start_as_current_span("invoke_agent shop-assistant", attributes=agent) as root:
        calls = [(name, args, f"call_{uuid.uuid4().hex[:12]}") for name, args in rollout.calls]
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "scripted-policy",
            "gen_ai.output.messages": _tool_call_parts(calls),
        }
        with tracer.start_as_current_span("chat scripted-policy", attributes=chat):
            time.sleep(0.002)
        for name, arguments, call_id in calls:
            _execute(tracer, name, arguments, call_id)
    return format(root.get_span_context().trace_id, "032x")

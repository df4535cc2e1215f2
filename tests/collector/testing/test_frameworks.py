"""A user's test file asserting on real frameworks through the plugin: pydantic-ai (its own GenAI
instrumentation) and Agno (OpenInference's instrumentor). No LLM, no network: the models are scripted.
Each file has a test that passes and one whose spec the agent breaks, failing with the check named."""

from __future__ import annotations

import pytest

from tests.collector.testing._plugin import preload, run

PYDANTIC_AI = """
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

SPEC = {"name": "refund-flow", "expected_tools": ["lookup_order", "refund"],
        "arguments": {"refund": {"order_id": "o-17"}}, "before": [["lookup_order", "refund"]]}


def scripted(*turns):
    queue = list(turns)

    def respond(messages, info):
        if not queue:
            return ModelResponse(parts=[TextPart("done")])
        calls = queue.pop(0)
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=name) for name, args in calls])

    return FunctionModel(respond)


def agent(*turns):
    shop = Agent(scripted(*turns), name="shop", capabilities=[Instrumentation()])

    @shop.tool_plain
    def lookup_order(order_id: str) -> str:
        return "paid"

    @shop.tool_plain
    def refund(order_id: str) -> str:
        return "refunded"

    return shop


def test_the_refund_follows_the_lookup(tracescore):
    shop = agent([("lookup_order", {"order_id": "o-17"})], [("refund", {"order_id": "o-17"})])
    shop.run_sync("refund o-17")
    tracescore.assert_run(SPEC)


def test_refunding_the_wrong_order_fails(tracescore):
    shop = agent([("lookup_order", {"order_id": "o-17"})], [("refund", {"order_id": "o-99"})])
    shop.run_sync("refund o-17")
    tracescore.assert_run(SPEC)
"""

AGNO = '''
import json

import httpx
from agno.agent import Agent
from agno.models.openai import OpenAIChat
from openinference.instrumentation.agno import AgnoInstrumentor
from opentelemetry.sdk.trace import TracerProvider

SPEC = """
name: shipping
expected_tools: [lookup_shipping_cutoff]
arguments:
  lookup_shipping_cutoff: {region: north}
forbidden_tools: [charge_card]
"""


def scripted_openai(calls):
    queue = [calls]

    def reply(request):
        calls = queue.pop(0) if queue else None
        message = {"role": "assistant", "content": "done"}
        if calls:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{n}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for n, a in calls]}
        return httpx.Response(200, json={
            "id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4o",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    client = httpx.Client(transport=httpx.MockTransport(reply))
    return OpenAIChat(id="gpt-4o", api_key="not-used", http_client=client)


def lookup_shipping_cutoff(region: str) -> str:
    return "15:00"


def charge_card(amount: float) -> str:
    return "charged"


def ship(tracescore, monkeypatch, calls):
    monkeypatch.setenv("AGNO_TELEMETRY", "false")
    provider = TracerProvider()
    tracescore.capture(provider)
    instrumentor = AgnoInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        agent = Agent(name="Shop", model=scripted_openai(calls), tools=[lookup_shipping_cutoff, charge_card],
                      telemetry=False)
        agent.run("ship north")
    finally:
        instrumentor.uninstrument()


def test_shipping_checks_the_cutoff(tracescore, monkeypatch):
    ship(tracescore, monkeypatch, [("lookup_shipping_cutoff", {"region": "north"})])
    tracescore.assert_run(SPEC)


def test_charging_the_card_is_forbidden(tracescore, monkeypatch):
    calls = [("lookup_shipping_cutoff", {"region": "north"}), ("charge_card", {"amount": 5})]
    ship(tracescore, monkeypatch, calls)
    tracescore.assert_run(SPEC)
'''


def test_a_pydantic_ai_agent_passes_and_fails_as_its_spec_says(pytester: pytest.Pytester) -> None:
    preload("pydantic_ai.capabilities", "pydantic_ai.models.function")
    pytester.makepyfile(test_shop=PYDANTIC_AI)
    result = run(pytester, "-q")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_refunding_the_wrong_order_fails*",
            "*refund-flow*FAIL*",
            "*check  arguments  refund*",
            '*refund*{"order_id": "o-99"}*ok*shop*',
        ]
    )


def test_an_openinference_agno_agent_passes_and_fails_as_its_spec_says(pytester: pytest.Pytester) -> None:
    preload("httpx", "agno.agent", "agno.models.openai", "openinference.instrumentation.agno")
    pytester.makepyfile(test_shipping=AGNO)
    result = run(pytester, "-q")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_charging_the_card_is_forbidden*",
            "*shipping*FAIL*failed by the forbidden-tools gate*",
            "*gate*forbidden_tools*charge_card*",
        ]
    )

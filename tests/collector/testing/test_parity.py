"""The API's verdicts are `serve`'s: the same spans, sent by the real OTLP exporter to a real `tracescore
serve` and scored there by `tracescore score --format json`, give the same JSON, byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector.testing import score_spans
from tests import _otel
from tests._server import ServeProcess
from tests.collector.testing._agent import weather_agent

SPECS = """
- name: weather
  select: {task: forecast}
  expected_tools: [get_weather]
  arguments:
    get_weather: {city: Paris}
- name: alerts
  select: {task: alerts}
  expected_tools: [get_alerts, get_weather]
  before: [[get_alerts, get_weather]]
  forbidden_tools: [send_sms]
  latency: {max_ms: {get_alerts: 60000}}
"""


def _pydantic_ai_run(provider: object) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    turns = [[("get_alerts", {"region": "north"})], [("get_weather", {"city": "Oslo"})]]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not turns:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart(n, a, tool_call_id=n) for n, a in turns.pop(0)])

    settings = InstrumentationSettings(tracer_provider=provider)  # type: ignore[arg-type]
    agent: Agent[None, str] = Agent(
        FunctionModel(respond), name="alerts_agent", capabilities=[Instrumentation(settings=settings)]
    )

    @agent.tool_plain
    def get_alerts(region: str) -> str:
        return "storm"

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return "rain"

    tracer = provider.get_tracer("harness")  # type: ignore[attr-defined]
    with tracer.start_as_current_span("rollout", attributes={"tracescore.task.id": "alerts"}):
        agent.run_sync("any alerts?")


def _agno_run(provider: object) -> None:
    """Agno under OpenInference's instrumentor, its OpenAI model answered by a script (no network)."""
    agno_agent = pytest.importorskip("agno.agent")
    agno_openai = pytest.importorskip("agno.models.openai")
    instrumentation = pytest.importorskip("openinference.instrumentation.agno")
    import httpx

    replies = [[("get_alerts", {"region": "south"}), ("send_sms", {"to": "+100"})], []]

    def reply(request: httpx.Request) -> httpx.Response:
        calls = replies.pop(0) if replies else []
        message: dict[str, object] = {"role": "assistant", "content": None if calls else "done"}
        if calls:
            message["tool_calls"] = [
                {"id": f"call_{n}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for n, a in calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        body = {"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4o"}
        return httpx.Response(200, json={**body, "choices": [choice], "usage": usage})

    def get_alerts(region: str) -> str:
        return "storm"

    def send_sms(to: str) -> str:
        return "sent"

    model = agno_openai.OpenAIChat(
        id="gpt-4o", api_key="not-used", http_client=httpx.Client(transport=httpx.MockTransport(reply))
    )
    instrumentor = instrumentation.AgnoInstrumentor()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AGNO_TELEMETRY", "false")
        instrumentor.instrument(tracer_provider=provider)
        try:
            tracer = provider.get_tracer("harness")  # type: ignore[attr-defined]
            with tracer.start_as_current_span("rollout", attributes={"tracescore.task.id": "alerts"}):
                agent = agno_agent.Agent(
                    name="Alerts", model=model, tools=[get_alerts, send_sms], telemetry=False
                )
                agent.run("any alerts?")
        finally:
            instrumentor.uninstrument()


def test_the_api_gives_the_verdicts_serve_and_score_give(server: ServeProcess, tmp_path: Path) -> None:
    provider = _otel.provider(server, "grpc", service="weather-service")
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    weather_agent(tracer, [("get_weather", {"city": "Paris"})])
    weather_agent(tracer, [("get_weather", {"city": "Rome"})])
    weather_agent(tracer, [("get_weather", {"city": "Paris"})], fail="get_weather")
    _pydantic_ai_run(provider)
    _agno_run(provider)
    assert provider.force_flush(10_000)
    provider.shutdown()
    assert server.stop() == 0

    spec_file = tmp_path / "specs.yaml"
    spec_file.write_text(SPECS)
    command = ["score", "--db", str(server.db), "--spec", str(spec_file), "--format", "json", "--no-store"]
    cli = subprocess.run(
        [sys.executable, "-m", "collector.cli", *command],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert cli.returncode == 1, cli.stderr  # some runs fail, as built
    api = score_spans(memory.get_finished_spans(), SPECS)
    assert [(v.spec, v.label) for v in api.verdicts] == [
        ("weather", "pass"),
        ("weather", "fail"),
        ("weather", "fail"),
        ("alerts", "pass"),
        ("alerts", "fail"),  # Agno's run sent an SMS (the forbidden-tools gate) and never got the weather
    ]
    assert [g.kind for g in api.verdicts[-1].gates if not g.satisfied] == ["forbidden_tools"]
    # No time stamp in a verdict's JSON differs: the JSON is equal whole.
    assert api.json() + "\n" == cli.stdout

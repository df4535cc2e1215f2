"""A hand-instrumented agent: GenAI semantic conventions' `invoke_agent` and `execute_tool` spans,
written with the OpenTelemetry SDK alone (docs/conventions.md)."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode


def weather_agent(
    tracer: trace.Tracer, calls: list[tuple[str, dict[str, Any]]], *, task: str = "forecast", fail: str = ""
) -> None:
    """One run: an agent span naming its task, one `execute_tool` span per call; the tool named `fail`
    raises (its span ends in error)."""
    with tracer.start_as_current_span(
        "invoke_agent weather",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "weather",
            "tracescore.task.id": task,
        },
    ):
        for n, (tool, arguments) in enumerate(calls):
            with tracer.start_as_current_span(
                f"execute_tool {tool}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.id": f"call-{n}",
                    "gen_ai.tool.call.arguments": json.dumps(arguments),
                },
                record_exception=False,
                set_status_on_exception=False,
            ) as span:
                if tool == fail:
                    span.set_status(Status(StatusCode.ERROR, f"{tool} is down"))


SPEC_YAML = """
name: weather
select: {task: forecast}
expected_tools: [get_weather]
arguments:
  get_weather: {city: Paris}
"""

"""Pydantic Logfire as a team already runs it, its spans also sent to tracescore, through the shared scenario.

Logfire is configured as a user who keeps their own backend would: `logfire.configure(...)` with one
more span processor, an OTLP/HTTP exporter pointed at tracescore (`additional_span_processors`). Here
`send_to_logfire=False` (no token, no network; with a token the same processor sits beside Logfire's
own exporter), `console=False`. Logfire keeps its own tracer provider; the harness's `rollout` span
(the task) is the current span when Logfire's spans start, so they are in its trace.

`--framework` picks what Logfire instruments:

- `openai-agents` (cell `openai-agents-logfire`): `logfire.instrument_openai_agents()` on the OpenAI
  Agents SDK, the model the SDK's own `OpenAIResponsesModel` on a scripted client (as in
  drive_openai_agents.py): `Function: {name}` spans per tool call, `Responses API` spans per model call.
- `pydantic-ai` (cell `pydantic-ai-logfire`): `logfire.instrument_pydantic_ai()` on pydantic-ai's
  `Agent` with a scripted `FunctionModel` (as in drive_pydantic_ai.py): pydantic-ai's own GenAI spans,
  through Logfire's provider.

Run inside a virtualenv with tests/frameworks/requirements/logfire-<framework>.txt installed:
    python tests/frameworks/drivers/drive_logfire.py --framework openai-agents \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import logfire
from _harness import SCENARIO, Harness, RecordingExporter, arguments
from opentelemetry.sdk.trace.export import BatchSpanProcessor

CELLS = {"openai-agents": "openai-agents-logfire", "pydantic-ai": "pydantic-ai-logfire"}
PACKAGES = {
    "openai-agents": ["logfire", "openai-agents", "openai"],
    "pydantic-ai": ["logfire", "pydantic-ai-slim"],
}


def _openai_agents(harness: Harness) -> None:
    from agents import Agent, Runner, Tool, function_tool, set_trace_processors
    from drive_openai_agents import scripted_model

    set_trace_processors([])  # drop the SDK's default processor (it uploads to OpenAI)
    logfire.instrument_openai_agents()
    get_weather, book_flight = harness.tools()
    tools: list[Tool] = [function_tool(get_weather), function_tool(book_flight)]
    for task, prompt, calls, answer in SCENARIO:
        agent = Agent(name="travel_agent", model=scripted_model(calls, answer), tools=tools)
        with harness.invocation(task):
            Runner.run_sync(agent, prompt)


def _pydantic_ai(harness: Harness) -> None:
    from drive_pydantic_ai import scripted
    from pydantic_ai import Agent

    logfire.instrument_pydantic_ai()
    get_weather, book_flight = harness.tools()
    for task, prompt, calls, answer in SCENARIO:
        agent: Agent[None, str] = Agent(
            scripted(calls, answer), name="travel_agent", tools=[get_weather, book_flight]
        )
        with harness.invocation(task):
            agent.run_sync(prompt)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--framework", choices=tuple(CELLS), default="openai-agents")
    args = parser.parse_args(argv)
    cell = CELLS[args.framework]
    harness = Harness(cell, PACKAGES[args.framework], args.endpoint, args.record)
    to_tracescore = RecordingExporter(args.endpoint, args.record / "otlp.jsonl" if args.record else None)
    logfire.configure(
        send_to_logfire=False,
        service_name=cell,
        console=False,
        additional_span_processors=[BatchSpanProcessor(to_tracescore)],
    )
    if args.framework == "openai-agents":
        _openai_agents(harness)
    else:
        _pydantic_ai(harness)
    logfire.force_flush()
    logfire.shutdown()
    # The Agents SDK's default failure_error_function redacts the exception's text everywhere: Logfire's
    # `error` attribute says only that the tool failed. pydantic-ai records the exception itself.
    harness.finish(requests=True, error_messages=args.framework == "pydantic-ai", parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Langfuse Python SDK (OpenTelemetry-based, v3 and later) through the shared scenario.

`--mode callback`: LangGraph's prebuilt ReAct agent (the `langgraph-react-*` cells' agent and scripted
model) run with Langfuse's LangChain `CallbackHandler`. `--mode observe`: the scenario's tools decorated
with `@observe(as_type="tool")`, called by a plain agent loop whose scripted model is an
`@observe(as_type="generation")` function returning what an OpenAI chat completion's message holds.

The setup is the one docs/integrations.md gives a team that keeps its own Langfuse: Langfuse is handed
the application's `TracerProvider`, which also carries an OTLP exporter to tracescore, so every span
(Langfuse's and the harness's task span) reaches tracescore over real OTLP/HTTP. Langfuse's own span
processor exports to a stand-in for the team's Langfuse (an in-memory exporter): nothing leaves the
machine but OTLP to `--endpoint`.

Run inside a virtualenv with tests/frameworks/requirements/langfuse.txt installed:
    python tests/frameworks/drivers/drive_langfuse.py --mode callback \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from _harness import SCENARIO, Harness, arguments
from drive_langgraph import ScriptedChatModel, _agent, _turns
from langchain_core.tools import tool
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

MODES = ("callback", "observe")


def _langfuse(harness: Harness) -> Any:
    """Langfuse's client on the application's provider; its exporter stands in for the team's Langfuse."""
    from langfuse import Langfuse

    return Langfuse(
        public_key="pk-lf-tracescore",
        secret_key="sk-lf-tracescore",
        base_url="http://127.0.0.1:9",  # never reached: the exporter below stands in for it
        tracer_provider=harness.provider,
        span_exporter=InMemorySpanExporter(),
    )


def _callback(harness: Harness) -> None:
    from langfuse.langchain import CallbackHandler

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return harness.get_weather(city)

    @tool
    def book_flight(destination: str, passengers: int) -> str:
        """Book a flight for some passengers."""
        return harness.book_flight(destination, passengers)

    handler = CallbackHandler(public_key="pk-lf-tracescore")
    for task, prompt, calls, answer in SCENARIO:
        agent = _agent(
            "react", ScriptedChatModel(messages=iter(_turns(calls, answer))), [get_weather, book_flight]
        )
        with harness.invocation(task):
            agent.invoke({"messages": [("user", prompt)]}, config={"callbacks": [handler]})


def _observe(harness: Harness) -> None:
    """A hand-written agent loop, as teams that use `@observe` write one: the model asks, the loop calls."""
    from langfuse import observe

    get_weather_fn, book_flight_fn = harness.tools()
    tools: dict[str, Callable[..., str]] = {
        "get_weather": observe(name="get_weather", as_type="tool")(get_weather_fn),
        "book_flight": observe(name="book_flight", as_type="tool")(book_flight_fn),
    }

    for task, prompt, calls, answer in SCENARIO:

        @observe(name="scripted-model", as_type="generation")
        def model(messages: list[dict[str, Any]], turn: int) -> dict[str, Any]:
            if turn == 0:
                # What `response.choices[0].message.model_dump()` of an OpenAI chat completion holds.
                requested = [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                    for i, n, a in calls  # noqa: B023
                ]
                return {"role": "assistant", "content": None, "tool_calls": requested}
            return {"role": "assistant", "content": answer}  # noqa: B023

        @observe(name="agent")
        def agent(prompt: str) -> str:
            messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
            for turn in range(2):
                reply = model(messages, turn)
                messages.append(reply)
                for call in reply.get("tool_calls", []):
                    function = call["function"]
                    try:
                        output = tools[function["name"]](**json.loads(function["arguments"]))
                    except ValueError as exc:
                        output = f"error: {exc}"
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
            return str(messages[-1]["content"])

        with harness.invocation(task):
            agent(prompt)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--mode", choices=MODES, default="callback")
    args = parser.parse_args(argv)
    packages = ["langfuse", "langgraph", "langchain-core"] if args.mode == "callback" else ["langfuse"]
    harness = Harness(f"langfuse-{args.mode}", packages, args.endpoint, args.record)
    langfuse = _langfuse(harness)
    if args.mode == "callback":
        _callback(harness)
        langfuse.flush()
        harness.finish(requests=True, parallel_calls=True)
    else:
        _observe(harness)
        langfuse.flush()
        harness.finish(requests=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""MLflow Tracing (the `mlflow-tracing` package, its default span format) through the shared scenario.

`--mode trace`: the scenario's tools decorated with `@mlflow.trace(span_type="TOOL")`, called by a plain
agent loop whose scripted model is an `@mlflow.trace(span_type="CHAT_MODEL")` function returning what an
OpenAI chat completion's message holds. `--mode langchain`: LangGraph's prebuilt ReAct agent (the
`langgraph-react-*` cells' agent and scripted model) traced by `mlflow.langchain.autolog()`.

MLflow runs in its unified mode (`MLFLOW_USE_DEFAULT_TRACER_PROVIDER=false`): it adds its span processor
to the application's global `TracerProvider`, which also carries the OTLP exporter to tracescore, so
MLflow's spans and the harness's task span share one trace and reach tracescore over real OTLP/HTTP.
MLflow's own OTLP exporter (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) stands for the team's MLflow
destination and is an in-memory exporter here: nothing leaves the machine but OTLP to `--endpoint`.

Run inside a virtualenv with tests/frameworks/requirements/mlflow.txt installed:
    python tests/frameworks/drivers/drive_mlflow.py --mode trace \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from _harness import SCENARIO, Harness, arguments
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

MODES = ("trace", "langchain")


def _configure(harness: Harness) -> None:
    """MLflow on the application's provider; its own OTLP destination a stand-in."""
    os.environ["MLFLOW_USE_DEFAULT_TRACER_PROVIDER"] = "false"
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://127.0.0.1:9/v1/traces"  # never reached
    os.environ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
    # mlflow-tracing 3.17.2 resolves a default tracking URI by importing `sqlparse`, which it does not
    # declare: without a tracking URI set, it records nothing (a warning per span). Never contacted here.
    os.environ.setdefault("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")
    trace.set_tracer_provider(harness.provider)
    import mlflow.tracing.provider

    mlflow.tracing.provider.get_otlp_exporter = InMemorySpanExporter  # type: ignore[assignment]
    # MLflow adds its processor to the provider when it first traces; a span the application opened
    # before that (the invocation's) is unknown to it, and the MLflow span under it fails to start.
    mlflow.tracing.enable()


def _langchain(harness: Harness) -> None:
    import mlflow.langchain
    from drive_langgraph import ScriptedChatModel, _agent, _turns
    from langchain_core.tools import tool

    mlflow.langchain.autolog()

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return harness.get_weather(city)

    @tool
    def book_flight(destination: str, passengers: int) -> str:
        """Book a flight for some passengers."""
        return harness.book_flight(destination, passengers)

    for task, prompt, calls, answer in SCENARIO:
        agent = _agent(
            "react", ScriptedChatModel(messages=iter(_turns(calls, answer))), [get_weather, book_flight]
        )
        with harness.invocation(task):
            agent.invoke({"messages": [("user", prompt)]})


def _decorated(harness: Harness) -> None:
    """A hand-written agent loop, as teams using `@mlflow.trace` write one: the model asks, the loop calls."""
    import mlflow

    get_weather_fn, book_flight_fn = harness.tools()
    tools: dict[str, Callable[..., str]] = {
        "get_weather": mlflow.trace(name="get_weather", span_type="TOOL")(get_weather_fn),
        "book_flight": mlflow.trace(name="book_flight", span_type="TOOL")(book_flight_fn),
    }

    for task, prompt, calls, answer in SCENARIO:

        @mlflow.trace(name="scripted-model", span_type="CHAT_MODEL")
        def model(messages: list[dict[str, Any]], turn: int) -> dict[str, Any]:
            if turn == 0:
                # What `response.choices[0].message.model_dump()` of an OpenAI chat completion holds.
                requested = [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                    for i, n, a in calls  # noqa: B023
                ]
                return {"role": "assistant", "content": None, "tool_calls": requested}
            return {"role": "assistant", "content": answer}  # noqa: B023

        @mlflow.trace(name="agent", span_type="AGENT")
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
    parser.add_argument("--mode", choices=MODES, default="trace")
    args = parser.parse_args(argv)
    packages = (
        ["mlflow-tracing", "langgraph", "langchain-core"] if args.mode == "langchain" else ["mlflow-tracing"]
    )
    harness = Harness(f"mlflow-{args.mode}", packages, args.endpoint, args.record)
    _configure(harness)
    if args.mode == "langchain":
        _langchain(harness)
        harness.finish(requests=True, parallel_calls=True)
    else:
        _decorated(harness)
        harness.finish(requests=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

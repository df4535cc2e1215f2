"""Haystack through the shared scenario, with OpenInference's instrumentation or Haystack's own tracing.

Each invocation is one `haystack.components.agents.Agent.run`. Haystack 3 (cells `haystack-*`): the
Agent runs each tool call itself (`components/agents/tool_calling.py` `_run_tool`, no `ToolInvoker`
component); the model is Haystack's own `MockChatGenerator` cycling through a script. Haystack 2 (cells
`haystack2-*`, from the same driver in a Haystack 2 virtualenv): the Agent runs its chat generator and a
`ToolInvoker` through `Pipeline._run_component`; Haystack 2 has no mock generator, so the model is
`ScriptedChatGenerator` below, a minimal chat generator component playing the same script. The script:
an assistant `ChatMessage` whose `ToolCall`s carry fixed ids, then the answer as text.

`get_weather` is made with the `@tool` decorator, `book_flight` is a `Tool` with a hand-written JSON
Schema. The Agent runs one step's calls in parallel (a thread pool). `raise_on_tool_invocation_failure`
is left at its default (False): a raising tool becomes a tool message flagged `error=True` whose text
is `Failed to invoke Tool `book_flight` with parameters {...}. Error: no seats left to Oslo`, and the
Agent goes on to the model's answer.

Tracing (`--tracing`):
- `openinference`: `HaystackInstrumentor().instrument()`. It wraps the `run` of every component class
  registered by then, so the Agent and the generator are imported first (a class registered later is
  only wrapped when `Pipeline._run_component` runs it), and only classes reachable as module attributes
  (so `ScriptedChatGenerator` is defined at module level).
- `native`: Haystack's own tracing spans through its `OpenTelemetryTracer` (in `opentelemetry-haystack`
  for Haystack 3, in `haystack.tracing` for Haystack 2), enabled with `haystack.tracing.enable_tracing`,
  with content tracing on (`tracing.tracer.is_content_tracing_enabled`, which
  `HAYSTACK_CONTENT_TRACING_ENABLED=true` sets when Haystack is imported).
- `native-nocontent`: the same, content tracing left at its default (off).

Offline: Haystack's anonymous usage telemetry (PostHog) is turned off before Haystack is imported
(`HAYSTACK_TELEMETRY_ENABLED=False`); the model makes no request, so nothing leaves the machine but
OTLP to `--endpoint`.

Run inside a virtualenv with tests/frameworks/requirements/haystack.txt (Haystack 3) or haystack2.txt
(Haystack 2) installed:
    python tests/frameworks/drivers/drive_haystack.py --tracing openinference \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

# Read when Haystack is imported (its telemetry is set up at import time).
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"

from _harness import (
    SCENARIO,
    Harness,
    arguments,
)
from haystack import component, tracing
from haystack.components.agents import Agent
from haystack.dataclasses import ChatMessage, ToolCall
from haystack.tools import Tool, tool

TRACINGS = ("openinference", "native", "native-nocontent")
Call = tuple[str, str, dict[str, Any]]
Turn: TypeAlias = str | ChatMessage
Model: TypeAlias = Callable[[list[Turn]], Any]


@component
class ScriptedChatGenerator:
    """Haystack 2's stand-in for `MockChatGenerator`: each `run` answers with the next turn of its script.

    Its `tools` parameter is what lets the Agent hand it tools."""

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = list(turns)

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        streaming_callback: Any = None,
        generation_kwargs: dict[str, Any] | None = None,
        tools: Any = None,
    ) -> dict[str, list[ChatMessage]]:
        if not self.turns:
            raise RuntimeError("the scripted model has no turn left")
        turn = self.turns.pop(0)
        return {"replies": [ChatMessage.from_assistant(turn) if isinstance(turn, str) else turn]}


def _model() -> Model:
    """Haystack's own `MockChatGenerator` where it has one (Haystack 3), else `ScriptedChatGenerator`."""
    try:
        from haystack.components.generators.chat import MockChatGenerator
    except ImportError:
        return ScriptedChatGenerator
    return lambda turns: MockChatGenerator(responses=turns, model="scripted")


def _turns(calls: Sequence[Call], answer: str) -> list[Turn]:
    requested = [ToolCall(id=call_id, tool_name=name, arguments=args) for call_id, name, args in calls]
    return [ChatMessage.from_assistant(tool_calls=requested), answer]


def _packages(tracing_mode: str) -> list[str]:
    """The packages whose versions shape the spans."""
    if tracing_mode == "openinference":
        return ["haystack-ai", "openinference-instrumentation-haystack"]
    if importlib.util.find_spec("haystack_integrations") is not None:
        return ["haystack-ai", "opentelemetry-haystack"]
    return ["haystack-ai"]


def _instrument(tracing_mode: str, harness: Harness) -> None:
    if tracing_mode == "openinference":
        from openinference.instrumentation.haystack import HaystackInstrumentor

        HaystackInstrumentor().instrument(tracer_provider=harness.provider)
        return
    try:  # Haystack 3 moved its tracer to the `opentelemetry-haystack` integration
        from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer
    except ImportError:
        from haystack.tracing import OpenTelemetryTracer  # type: ignore[attr-defined,no-redef]

    # The scope name Haystack 2's auto-configuration and the integration's connector give their tracer.
    tracing.enable_tracing(OpenTelemetryTracer(harness.provider.get_tracer("haystack")))
    tracing.tracer.is_content_tracing_enabled = tracing_mode == "native"


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--tracing", choices=TRACINGS, default=TRACINGS[0])
    args = parser.parse_args(argv)
    model = _model()  # imported before instrumenting: see above
    major = importlib.metadata.version("haystack-ai").split(".")[0]
    cell = f"haystack{'' if major == '3' else major}-{args.tracing}"
    harness = Harness(cell, _packages(args.tracing), args.endpoint, args.record)
    _instrument(args.tracing, harness)

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return harness.get_weather(city)

    def book(destination: str, passengers: int) -> str:
        return harness.book_flight(destination, passengers)

    book_flight = Tool(
        name="book_flight",
        description="Book a flight for some passengers.",
        parameters={
            "type": "object",
            "properties": {
                "destination": {"type": "string", "description": "Where to fly."},
                "passengers": {"type": "integer", "description": "How many people fly."},
            },
            "required": ["destination", "passengers"],
        },
        function=book,
    )

    for task, prompt, calls, answer in SCENARIO:
        agent = Agent(chat_generator=model(_turns(calls, answer)), tools=[get_weather, book_flight])
        with harness.invocation(task):
            agent.run(messages=[ChatMessage.from_user(prompt)])
    content = args.tracing != "native-nocontent"
    harness.finish(requests=content, arguments=content, error_messages=content, parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

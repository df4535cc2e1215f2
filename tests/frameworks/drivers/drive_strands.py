"""Strands Agents through the shared scenario, in each of its telemetry modes.

Strands instruments itself (strands/telemetry/tracer.py): it traces through the global tracer
provider, so the harness's provider is made global before the first `Agent` is built. Its conventions
are chosen by `OTEL_SEMCONV_STABILITY_OPT_IN`, read once when the first `Agent` creates strands'
`Tracer` singleton; the driver sets it from `--mode` before that:

- `default`: the variable unset; messages as legacy per-message span events (`gen_ai.user.message`,
  `gen_ai.choice`, `gen_ai.tool.message`), `gen_ai.system`.
- `latest`: `gen_ai_latest_experimental`; messages on `gen_ai.client.inference.operation.details`
  events (`gen_ai.input.messages` / `gen_ai.output.messages`), `gen_ai.provider.name`, and
  `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result` on the tool spans.
- `latest_attributes`: `gen_ai_latest_experimental,gen_ai_span_attributes_only`; the same, with the
  message content as span attributes instead of events (what strands does for Langfuse).

The model is a minimal `strands.models.Model` subclass that streams a script of Bedrock-style
ConverseStream events (`toolUse` blocks with fixed ids, then text); nothing leaves the machine but
OTLP to `--endpoint`. Strands' default `ConcurrentToolExecutor` runs a turn's tool calls in parallel,
and a tool's exception becomes an error tool result the model is given, so the booking task ends with
the model's answer.

`--scenario delegation` (cells `strands-multiagent-<mode>`) plays the harness's delegation scenario
with Strands' agents as tools: the leader `coordinator` is given the member `weather_agent` through
`Agent.as_tool()` (a tool named after the agent, taking `input`), and the member calls `get_weather`.

Run inside a virtualenv with tests/frameworks/requirements/strands.txt installed:
    python tests/frameworks/drivers/drive_strands.py --mode default \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/strands-default
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator, AsyncIterable, Sequence
from typing import Any

from _harness import (
    DELEGATION_PROMPT,
    DELEGATION_TASK,
    LEADER,
    LEADER_ANSWER,
    MEMBER,
    MEMBER_ANSWER,
    MEMBER_CALLS,
    MEMBER_REQUEST,
    SCENARIO,
    Harness,
    arguments,
)
from opentelemetry import trace
from strands import Agent, tool
from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

# The value of OTEL_SEMCONV_STABILITY_OPT_IN for each mode (None: unset).
MODES: dict[str, str | None] = {
    "default": None,
    "latest": "gen_ai_latest_experimental",
    "latest_attributes": "gen_ai_latest_experimental,gen_ai_span_attributes_only",
}

Calls = Sequence[tuple[str, str, dict[str, Any]]]


class ScriptedModel(Model):
    """A model that streams one scripted turn per request: the tool calls first, then the answer."""

    def __init__(self, calls: Calls, answer: str) -> None:
        self.config: dict[str, Any] = {"model_id": "scripted"}
        self._turns: list[Calls | str] = [calls, answer]

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def structured_output(
        self, output_model: Any, prompt: Messages, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, Any], None]:
        raise NotImplementedError("the scripted model gives no structured output")
        yield {}  # an async generator, as the interface declares

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[StreamEvent]:
        turn = self._turns.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, str):
            yield {"contentBlockDelta": {"delta": {"text": turn}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        else:
            for call_id, name, args in turn:
                yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": call_id, "name": name}}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
                "metrics": {"latencyMs": 1},
            }
        }


def _delegate(harness: Harness) -> None:
    """The delegation scenario: the member as the leader's tool (`Agent.as_tool()`)."""
    member_get_weather = harness.member_get_weather()

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city.
        """
        return member_get_weather(city)

    member = Agent(
        name=MEMBER,
        description="Answers weather questions.",
        model=ScriptedModel(MEMBER_CALLS, MEMBER_ANSWER),
        tools=[get_weather],
        callback_handler=None,
    )
    leader_calls = (("call_delegate", MEMBER, {"input": MEMBER_REQUEST}),)
    leader = Agent(
        name=LEADER,
        model=ScriptedModel(leader_calls, LEADER_ANSWER),
        tools=[member.as_tool()],
        callback_handler=None,
    )
    with harness.invocation(DELEGATION_TASK):
        leader(DELEGATION_PROMPT)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--mode", choices=tuple(MODES), default="default")
    parser.add_argument("--scenario", choices=("single", "delegation"), default="single")
    args = parser.parse_args(argv)
    delegation = args.scenario == "delegation"
    opt_in = MODES[args.mode]
    if opt_in is None:
        os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
    else:
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = opt_in
    cell = f"strands-{'multiagent-' if delegation else ''}{args.mode}"
    harness = Harness(cell, ["strands-agents"], args.endpoint, args.record)
    trace.set_tracer_provider(harness.provider)
    if delegation:
        _delegate(harness)
        harness.finish(requests=True, delegation_tools=[MEMBER])
        return 0

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city.
        """
        return harness.get_weather(city)

    @tool
    def book_flight(destination: str, passengers: int) -> str:
        """Book a flight for some passengers.

        Args:
            destination: Where to fly.
            passengers: How many people fly.
        """
        return harness.book_flight(destination, passengers)

    for task, prompt, calls, answer in SCENARIO:
        agent = Agent(
            model=ScriptedModel(calls, answer),
            tools=[get_weather, book_flight],
            callback_handler=None,
        )
        with harness.invocation(task):
            agent(prompt)
    harness.finish(requests=True, parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

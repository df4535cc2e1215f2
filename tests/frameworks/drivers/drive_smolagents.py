"""smolagents' `ToolCallingAgent` through the shared scenario, with OpenInference's instrumentation.

The model is smolagents' own `InferenceClientModel` (its default model class, so the instrumentation
wraps its `generate` as it would in production) given a scripted `client`: the client's
`chat_completion` answers each turn with a `huggingface_hub` `ChatCompletionOutput` holding the next
turn of the script (tool calls with fixed ids and JSON-string arguments, as an OpenAI-compatible
provider returns them). No `InferenceClient` is ever built, so nothing leaves the machine but OTLP to
`--endpoint`.

A `ToolCallingAgent` ends only through its own `final_answer` tool, so each script ends with a
`final_answer` call: a real execution of a framework-internal tool. Several calls in one turn run in
parallel (a thread pool that copies the context).

`--scenario delegation` (cell `smolagents-multiagent-openinference`) plays the harness's delegation
scenario with smolagents' managed agents: the leader `coordinator` is given the member `weather_agent`
(`managed_agents=[...]`, with a name and description), which its model calls like a tool with a `task`;
the member calls `get_weather`, and each ends through its own `final_answer`.

Run inside a virtualenv with tests/frameworks/requirements/smolagents-openinference.txt installed:
    python tests/frameworks/drivers/drive_smolagents.py \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/smolagents-openinference
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
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
from huggingface_hub import (
    ChatCompletionOutput,
    ChatCompletionOutputComplete,
    ChatCompletionOutputFunctionDefinition,
    ChatCompletionOutputMessage,
    ChatCompletionOutputToolCall,
    ChatCompletionOutputUsage,
)
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from smolagents import InferenceClientModel, LogLevel, ToolCallingAgent, tool

Call = tuple[str, str, dict[str, Any]]


class ScriptedClient:
    """Stands in for `huggingface_hub.InferenceClient`: each `chat_completion` is the script's next turn."""

    def __init__(self, turns: Sequence[Sequence[Call]]) -> None:
        self._turns = list(turns)

    def chat_completion(self, **kwargs: Any) -> ChatCompletionOutput:
        calls = self._turns.pop(0)
        message = ChatCompletionOutputMessage(
            role="assistant",
            content=None,
            tool_calls=[
                ChatCompletionOutputToolCall(
                    id=call_id,
                    type="function",
                    function=ChatCompletionOutputFunctionDefinition(name=name, arguments=json.dumps(args)),
                )
                for call_id, name, args in calls
            ],
        )
        return ChatCompletionOutput(
            id="scripted",
            created=0,
            model="scripted",
            system_fingerprint="scripted",
            choices=[
                ChatCompletionOutputComplete(
                    finish_reason="tool_calls", index=0, message=message, logprobs=None
                )
            ],
            usage=ChatCompletionOutputUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15),
        )


def _turns(calls: Sequence[Call], answer: str) -> list[list[Call]]:
    """All calls in one turn (smolagents runs them in parallel), then the answer through `final_answer`."""
    return [list(calls), [("call_final", "final_answer", {"answer": answer})]]


def _delegate(harness: Harness) -> None:
    """The delegation scenario: the member as the leader's managed agent."""
    member_get_weather = harness.member_get_weather()

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city to get the weather for.
        """
        return member_get_weather(city)

    member = ToolCallingAgent(
        tools=[get_weather],
        model=InferenceClientModel(
            model_id="scripted", client=ScriptedClient(_turns(MEMBER_CALLS, MEMBER_ANSWER))
        ),
        max_steps=4,
        verbosity_level=LogLevel.OFF,
        name=MEMBER,
        description="Answers weather questions.",
    )
    leader_calls = (("call_delegate", MEMBER, {"task": MEMBER_REQUEST}),)
    leader = ToolCallingAgent(
        tools=[],
        model=InferenceClientModel(
            model_id="scripted", client=ScriptedClient(_turns(leader_calls, LEADER_ANSWER))
        ),
        managed_agents=[member],
        max_steps=4,
        verbosity_level=LogLevel.OFF,
        name=LEADER,
    )
    with harness.invocation(DELEGATION_TASK):
        leader.run(DELEGATION_PROMPT)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--scenario", choices=("single", "delegation"), default="single")
    args = parser.parse_args(argv)
    delegation = args.scenario == "delegation"
    harness = Harness(
        "smolagents-multiagent-openinference" if delegation else "smolagents-openinference",
        ["smolagents", "openinference-instrumentation-smolagents", "huggingface-hub"],
        args.endpoint,
        args.record,
    )
    SmolagentsInstrumentor().instrument(tracer_provider=harness.provider)
    if delegation:
        _delegate(harness)
        harness.finish(requests=True, internal_tools=["final_answer"], delegation_tools=[MEMBER])
        return 0

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: The city to get the weather for.
        """
        return harness.get_weather(city)

    @tool
    def book_flight(destination: str, passengers: int) -> str:
        """Book a flight for some passengers.

        Args:
            destination: The city to fly to.
            passengers: How many people fly.
        """
        return harness.book_flight(destination, passengers)

    for task, prompt, calls, answer in SCENARIO:
        model = InferenceClientModel(model_id="scripted", client=ScriptedClient(_turns(calls, answer)))
        agent = ToolCallingAgent(
            tools=[get_weather, book_flight], model=model, max_steps=4, verbosity_level=LogLevel.OFF
        )
        with harness.invocation(task):
            agent.run(prompt)
    harness.finish(requests=True, internal_tools=["final_answer"], parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

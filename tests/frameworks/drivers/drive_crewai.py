"""CrewAI through the shared scenario, with OpenInference's instrumentation (its CrewAIInstrumentor).

Each invocation is a `Crew` of one `Agent` and one `Task`, run by `Crew.kickoff`. `get_weather` is a
function tool (`@tool`, run by `Tool.run`), `book_flight` a `BaseTool` subclass (run by
`BaseTool.run`), so both of the instrumentation's tool wrappers are exercised. The agent's `llm` is a
minimal `BaseLLM` subclass playing a script: it says it supports function calling, so CrewAI takes
its native tool-calling path (not the ReAct text format) and hands it OpenAI-style tool schemas; each
`call` answers with the next turn, a list of OpenAI-style tool calls with fixed ids and JSON-string
arguments, or the final answer as text. Like CrewAI's own providers it announces each call on
CrewAI's event bus (`LLMCallStartedEvent`/`LLMCallCompletedEvent`), which is what the event-listener
mode makes its LLM spans from. CrewAI runs the calls of one turn in parallel (a thread pool that
copies the context), catches a tool's exception and gives the model `Error executing tool: <message>`.

Instrumentation modes (`--mode`): `wrappers` is `CrewAIInstrumentor().instrument()`'s default (it
wraps `Crew.kickoff`, `Task._execute_core`, `BaseTool.run`/`Tool.run`; no LLM spans: the model's calls
are left to a provider instrumentation, cell `crewai-openinference`); `events` is
`instrument(use_event_listener=True)`, spans assembled from CrewAI's events, LLM spans included (cell
`crewai-openinference-events`).

Offline: CrewAI's anonymous telemetry (`CREWAI_DISABLE_TELEMETRY=true`) and its own execution tracing
to CrewAI AMP, with its first-run consent prompt (`CREWAI_TRACING_ENABLED=false`), are both turned
off before CrewAI is imported; both use private tracer providers, never the global one, and
`OTEL_SDK_DISABLED` stays unset. The scripted model makes no request, so nothing leaves the machine
but OTLP to `--endpoint`.

`--scenario delegation` (cells `crewai-multiagent-openinference*`) plays the harness's delegation
scenario with CrewAI's own delegation: a crew of two agents, `coordinator` (`allow_delegation=True`, the
task's agent) and `weather_agent` (with `get_weather`); the coordinator's model calls CrewAI's `Delegate
work to coworker` tool, which runs the coworker on a task of its own inside the tool call.

Run inside a virtualenv with tests/frameworks/requirements/crewai-openinference.txt installed:
    python tests/frameworks/drivers/drive_crewai.py --mode wrappers \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

# CrewAI reads these when it is imported (its telemetry singleton is built at import time).
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"

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
from crewai import Agent, Crew, Task
from crewai.agents.agent_builder.base_agent import BaseAgent
from crewai.events.event_bus import crewai_event_bus
from crewai.events.types.llm_events import LLMCallType
from crewai.llms.base_llm import BaseLLM, llm_call_context
from crewai.tools import BaseTool, tool
from crewai.utilities.types import LLMMessage
from openinference.instrumentation.crewai import CrewAIInstrumentor
from pydantic import BaseModel, Field, PrivateAttr

MODES = ("wrappers", "events")
Call = tuple[str, str, dict[str, Any]]
Turn = str | list[dict[str, Any]]


class ScriptedLLM(BaseLLM):
    """A model that plays a script: each `call` returns the next turn (tool calls, or the answer)."""

    turns: list[Turn] = Field(default_factory=list)

    def supports_function_calling(self) -> bool:
        return True

    def call(
        self,
        messages: str | list[LLMMessage],
        tools: list[dict[str, BaseTool]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Task | None = None,
        from_agent: BaseAgent | None = None,
        response_model: type[BaseModel] | None = None,
    ) -> str | Any:
        with llm_call_context():
            self._emit_call_started_event(
                messages=messages,
                tools=tools,
                callbacks=callbacks,
                available_functions=available_functions,
                from_task=from_task,
                from_agent=from_agent,
            )
            if not self.turns:
                raise RuntimeError("the scripted model has no turn left")
            turn = self.turns.pop(0)
            self._emit_call_completed_event(
                response=turn,
                call_type=LLMCallType.TOOL_CALL if isinstance(turn, list) else LLMCallType.LLM_CALL,
                from_task=from_task,
                from_agent=from_agent,
                messages=messages,
            )
            return turn


def _turns(calls: Sequence[Call], answer: str) -> list[Turn]:
    requested = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for call_id, name, args in calls
    ]
    return [requested, answer]


class BookFlightArguments(BaseModel):
    destination: str = Field(description="Where to fly.")
    passengers: int = Field(description="How many people fly.")


class BookFlight(BaseTool):
    """`book_flight` as a `BaseTool` subclass (the other tool is a function tool)."""

    name: str = "book_flight"
    description: str = "Book a flight for some passengers."
    args_schema: type[BaseModel] = BookFlightArguments
    _harness: Harness = PrivateAttr()

    def __init__(self, harness: Harness) -> None:
        super().__init__()
        self._harness = harness

    def _run(self, destination: str, passengers: int) -> str:
        return self._harness.book_flight(destination, passengers)


# CrewAI's delegation tool (`crewai.tools.agent_tools.delegate_work_tool`), as the model calls it: tool
# names are sanitised for function calling (`crewai.utilities.string_utils.sanitize_tool_name`).
DELEGATE = "delegate_work_to_coworker"


def _delegate(harness: Harness) -> None:
    """The delegation scenario: a crew whose task's agent delegates to its coworker."""
    member_get_weather = harness.member_get_weather()

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return member_get_weather(city)

    member = Agent(
        role=MEMBER,
        goal="Answer weather questions with your tool.",
        backstory="A weather expert.",
        llm=ScriptedLLM(model="scripted", turns=_turns(MEMBER_CALLS, MEMBER_ANSWER)),
        tools=[get_weather],
        verbose=False,
    )
    delegation = {"task": MEMBER_REQUEST, "context": DELEGATION_PROMPT, "coworker": MEMBER}
    leader = Agent(
        role=LEADER,
        goal="Answer the user's question by delegating to your coworkers.",
        backstory="A coordinator.",
        llm=ScriptedLLM(
            model="scripted", turns=_turns((("call_delegate", DELEGATE, delegation),), LEADER_ANSWER)
        ),
        allow_delegation=True,
        verbose=False,
    )
    crew_task = Task(description=DELEGATION_PROMPT, expected_output="A short answer.", agent=leader)
    crew = Crew(agents=[leader, member], tasks=[crew_task], verbose=False)
    with harness.invocation(DELEGATION_TASK):
        crew.kickoff()
        crewai_event_bus.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--mode", choices=MODES, default="wrappers")
    parser.add_argument("--scenario", choices=("single", "delegation"), default="single")
    args = parser.parse_args(argv)
    if os.environ.get("OTEL_SDK_DISABLED"):
        parser.error("OTEL_SDK_DISABLED is set: the harness's provider would record nothing")
    delegation = args.scenario == "delegation"
    cell = "crewai-" + ("multiagent-" if delegation else "") + "openinference"
    cell += "-events" if args.mode == "events" else ""
    harness = Harness(cell, ["crewai", "openinference-instrumentation-crewai"], args.endpoint, args.record)
    CrewAIInstrumentor().instrument(
        tracer_provider=harness.provider, use_event_listener=args.mode == "events"
    )
    if delegation:
        _delegate(harness)
        # The wrappers name a tool's span after the tool; the event listener after the tool's function name.
        name = DELEGATE if args.mode == "events" else "Delegate work to coworker"
        harness.finish(requests=args.mode == "events", delegation_tools=[name])
        return 0

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return harness.get_weather(city)

    tools: list[BaseTool] = [get_weather, BookFlight(harness)]
    for task, prompt, calls, answer in SCENARIO:
        agent = Agent(
            role="assistant",
            goal="Answer the user's question with the tools you have.",
            backstory="A helpful travel assistant.",
            llm=ScriptedLLM(model="scripted", turns=_turns(calls, answer)),
            tools=tools,
            verbose=False,
        )
        crew_task = Task(description=prompt, expected_output="A short answer.", agent=agent)
        crew = Crew(agents=[agent], tasks=[crew_task], verbose=False)
        with harness.invocation(task):
            crew.kickoff()
            crewai_event_bus.flush()  # the event listener's spans end in the bus's handler threads
    harness.finish(requests=args.mode == "events", parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The OpenAI Agents SDK through the shared scenario, with OpenInference's or OpenLLMetry's instrumentation.

The SDK's own tracing is not OpenTelemetry: each instrumentation (`--instrumentation`) registers a
`TracingProcessor` that turns the SDK's spans into OpenTelemetry spans, in place of the SDK's default
processor (which uploads traces to OpenAI): OpenInference's `OpenAIAgentsInstrumentor` after
`set_trace_processors([])`, OpenLLMetry's (`opentelemetry-instrumentation-openai-agents`) with
`replace_existing_processors=True`.

The model is the SDK's own `OpenAIResponsesModel` (so the SDK opens its real `response` spans, where the
requests are), whose `AsyncOpenAI` client is given an `httpx2.AsyncClient` (openai 3's HTTP library) on
a `MockTransport`: each `/responses` request is answered by the script's next turn (both weather calls
in one reply, call ids `call_paris` and `call_tokyo`; then the answer). No socket is opened. The SDK
runs a turn's function calls concurrently; a tool's exception goes to the model as the fixed text of
the SDK's default `failure_error_function` ("An error occurred while running the tool. Please try
again."; the exception's own text is redacted everywhere, spans included), so the booking task ends
with the model's answer.

`--scenario delegation` (cells `openai-agents-multiagent-<instrumentation>`) plays the harness's
delegation scenario: the member agent is the leader's tool (`Agent.as_tool`).

Run inside a virtualenv with tests/frameworks/requirements/openai-agents-<instrumentation>.txt installed:
    python tests/frameworks/drivers/drive_openai_agents.py --instrumentation openinference \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import httpx2
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
from agents import Agent, OpenAIResponsesModel, Runner, Tool, function_tool, set_trace_processors
from openai import AsyncOpenAI
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

Calls = Sequence[tuple[str, str, dict[str, Any]]]
PACKAGES = {
    "openinference": "openinference-instrumentation-openai-agents",
    "openllmetry": "opentelemetry-instrumentation-openai-agents",
}


def _response(n: int, calls: Calls | None, answer: str) -> dict[str, Any]:
    """One Responses API object: the function calls when there are any, else the answer."""
    output: list[Any]
    if calls:
        output = [
            ResponseFunctionToolCall(
                id=f"fc_{call_id}",
                call_id=call_id,
                type="function_call",
                name=name,
                arguments=json.dumps(args),
                status="completed",
            )
            for call_id, name, args in calls
        ]
    else:
        text = ResponseOutputText(type="output_text", text=answer, annotations=[])
        output = [
            ResponseOutputMessage(
                id=f"msg_{n}", type="message", role="assistant", status="completed", content=[text]
            )
        ]
    response = Response(
        id=f"resp_{n}",
        created_at=0,
        model="gpt-4o",
        object="response",
        output=output,
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
        status="completed",
    )
    parsed: dict[str, Any] = json.loads(response.model_dump_json())
    return parsed


def scripted_model(calls: Calls, answer: str) -> OpenAIResponsesModel:
    """The SDK's Responses model on a client whose every reply is the script's next turn."""
    turns: list[Calls | None] = [calls, None]
    replies: list[int] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        if not request.url.path.endswith("/responses"):
            return httpx2.Response(404, json={"error": f"not scripted: {request.url.path}"})
        replies.append(len(replies) + 1)
        return httpx2.Response(200, json=_response(replies[-1], turns.pop(0) if turns else None, answer))

    client = AsyncOpenAI(
        api_key="not-used", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(reply))
    )
    return OpenAIResponsesModel(model="gpt-4o", openai_client=client)


def _instrument(name: str, harness: Harness) -> None:
    if name == "openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        set_trace_processors([])  # drop the SDK's default processor (it uploads to OpenAI)
        OpenAIAgentsInstrumentor().instrument(tracer_provider=harness.provider)
    else:
        from opentelemetry.instrumentation.openai_agents import (
            OpenAIAgentsInstrumentor as OpenLLMetryInstrumentor,
        )

        OpenLLMetryInstrumentor(replace_existing_processors=True).instrument(tracer_provider=harness.provider)


def _delegate(harness: Harness) -> None:
    """The delegation scenario: the member as the leader's tool (`Agent.as_tool`), so the member runs
    inside the leader's tool call (a handoff would make it a top-level agent of the run instead)."""
    member = Agent(
        name=MEMBER,
        model=scripted_model(MEMBER_CALLS, MEMBER_ANSWER),
        tools=[function_tool(harness.member_get_weather())],
    )
    leader_calls = (("call_delegate", MEMBER, {"input": MEMBER_REQUEST}),)
    tool = member.as_tool(tool_name=MEMBER, tool_description="Answers weather questions.")
    leader = Agent(name=LEADER, model=scripted_model(leader_calls, LEADER_ANSWER), tools=[tool])
    with harness.invocation(DELEGATION_TASK):
        Runner.run_sync(leader, DELEGATION_PROMPT)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--instrumentation", choices=tuple(PACKAGES), default="openinference")
    parser.add_argument("--scenario", choices=("single", "delegation"), default="single")
    args = parser.parse_args(argv)
    delegation = args.scenario == "delegation"
    harness = Harness(
        f"openai-agents-{'multiagent-' if delegation else ''}{args.instrumentation}",
        ["openai-agents", PACKAGES[args.instrumentation], "openai"],
        args.endpoint,
        args.record,
    )
    _instrument(args.instrumentation, harness)
    if delegation:
        _delegate(harness)
        harness.finish(requests=True, delegation_tools=[MEMBER])
        return 0
    get_weather, book_flight = harness.tools()
    tools: list[Tool] = [function_tool(get_weather), function_tool(book_flight)]
    for task, prompt, calls, answer in SCENARIO:
        agent = Agent(name="travel_agent", model=scripted_model(calls, answer), tools=tools)
        with harness.invocation(task):
            Runner.run_sync(agent, prompt)
    # The default failure_error_function keeps the exception's text from the model, and the SDK's
    # function span records only that the tool failed: the text reaches no span.
    harness.finish(requests=True, error_messages=False, parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

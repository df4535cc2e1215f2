"""AutoGen AgentChat through the shared scenario, with OpenInference's instrumentation or AutoGen's own spans.

Each invocation is one `autogen_agentchat.agents.AssistantAgent` (the 0.4+ API) with the scenario's
tools as plain functions (AutoGen wraps them in `FunctionTool`), run by `asyncio.run(agent.run(...))`.
`reflect_on_tool_use=True` makes the agent call the model once more after its tools ran, so the model
gives the final answer; AutoGen runs the calls of one model turn concurrently (`asyncio.gather`), and
turns a tool's exception into an error `FunctionExecutionResult` (`is_error=True`) for the model.

The model (`--model`):
- `openai`: AutoGen's own `OpenAIChatCompletionClient`, whose OpenAI SDK client is handed an
  `httpx2.AsyncClient` on an in-process `MockTransport` that answers each chat-completions request
  with the next scripted `chat.completion` (tool calls with fixed ids, then the answer). The request
  never leaves the process; this is the client OpenInference's instrumentation makes LLM spans of.
- `replay`: AutoGen's fake `ReplayChatCompletionClient` playing the script as `CreateResult`s; the
  instrumentation does not wrap it, so no LLM span shows the model's requests.

Telemetry (`--telemetry`):
- `openinference`: `AutogenAgentChatInstrumentor().instrument(tracer_provider=...)` with the
  harness's provider; the global provider stays the no-op one, so AutoGen's own spans go nowhere.
- `native`: no instrumentation; the harness's provider becomes the global one, which is where
  autogen-core's GenAI spans go (`create_agent`/`invoke_agent` in `BaseChatAgent`, `execute_tool` in
  `BaseTool.run_json`: autogen_core/_telemetry/_genai.py).
- `both`: the two at once, as with a global provider that OpenInference is also given (Phoenix's
  `register()` sets the global provider by default).

Cells: `autogen-openinference` (`--telemetry openinference --model openai`), `autogen-native`
(`--telemetry native`, any model: AutoGen makes no model spans of its own), `autogen-openinference-global`
(`--telemetry both --model openai`), `autogen-openinference-replay` (`--telemetry openinference
--model replay`).

The agent is built outside the invocation, as an application builds it once: in `native`/`both`
its `create_agent` span is a trace of its own. Nothing leaves the machine but OTLP to `--endpoint`.

`--scenario delegation` (cells `autogen-multiagent-<telemetry>`) plays the harness's delegation scenario
with AgentChat's agent as a tool: the leader `coordinator` is given the member `weather_agent` as an
`autogen_agentchat.tools.AgentTool` (a tool named after the agent, taking `task`), and the member calls
`get_weather`.

Run inside a virtualenv with tests/frameworks/requirements/autogen.txt installed:
    python tests/frameworks/drivers/drive_autogen.py --telemetry openinference --model openai \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

import asyncio
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
from autogen_agentchat.agents import AssistantAgent
from autogen_core import FunctionCall
from autogen_core.models import ChatCompletionClient, CreateResult, ModelFamily, ModelInfo, RequestUsage
from autogen_ext.models.openai import OpenAIChatCompletionClient
from autogen_ext.models.replay import ReplayChatCompletionClient
from opentelemetry import trace

TELEMETRY = ("openinference", "native", "both")
MODELS = ("openai", "replay")
Call = tuple[str, str, dict[str, Any]]


def _cell(telemetry: str, model: str) -> str:
    name = {"openinference": "openinference", "native": "native", "both": "openinference-global"}[telemetry]
    return f"autogen-{name}" + ("-replay" if model == "replay" and telemetry != "native" else "")


def _replay(calls: Sequence[Call], answer: str) -> ChatCompletionClient:
    requested = [
        FunctionCall(id=call_id, name=name, arguments=json.dumps(args)) for call_id, name, args in calls
    ]
    turn = CreateResult(
        finish_reason="function_calls",
        content=requested,
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )
    info = ModelInfo(
        vision=False,
        function_calling=True,
        json_output=False,
        family=ModelFamily.UNKNOWN,
        structured_output=False,
    )
    return ReplayChatCompletionClient([turn, answer], model_info=info)


def _completion(number: int, message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _openai(calls: Sequence[Call], answer: str) -> ChatCompletionClient:
    requested = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for call_id, name, args in calls
    ]
    turns = [
        _completion(1, {"role": "assistant", "content": None, "tool_calls": requested}, "tool_calls"),
        _completion(2, {"role": "assistant", "content": answer}, "stop"),
    ]

    def answer_request(request: httpx2.Request) -> httpx2.Response:
        if request.url.path != "/v1/chat/completions" or not turns:
            return httpx2.Response(500, json={"error": {"message": f"unscripted {request.url.path}"}})
        return httpx2.Response(200, json=turns.pop(0))

    return OpenAIChatCompletionClient(  # type: ignore[call-arg]  # http_client goes to the OpenAI SDK client
        model="gpt-4o",
        api_key="offline",
        base_url="http://scripted.invalid/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer_request)),
    )


def _delegate(harness: Harness, model: str) -> None:
    """The delegation scenario: the member as the leader's `AgentTool`."""
    from autogen_agentchat.tools import AgentTool

    script = _openai if model == "openai" else _replay
    member = AssistantAgent(
        MEMBER,
        model_client=script(MEMBER_CALLS, MEMBER_ANSWER),
        tools=[harness.member_get_weather()],
        reflect_on_tool_use=True,
        description="Answers weather questions.",
    )
    leader_calls = (("call_delegate", MEMBER, {"task": MEMBER_REQUEST}),)
    leader = AssistantAgent(
        LEADER,
        model_client=script(leader_calls, LEADER_ANSWER),
        tools=[AgentTool(agent=member)],
        reflect_on_tool_use=True,
    )
    with harness.invocation(DELEGATION_TASK):
        asyncio.run(leader.run(task=DELEGATION_PROMPT))


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--telemetry", choices=TELEMETRY, default="openinference")
    parser.add_argument("--model", choices=MODELS, default="openai")
    parser.add_argument("--scenario", choices=("single", "delegation"), default="single")
    args = parser.parse_args(argv)
    delegation = args.scenario == "delegation"
    packages = ["autogen-agentchat", "autogen-core", "autogen-ext"]
    if args.telemetry != "native":
        packages.append("openinference-instrumentation-autogen-agentchat")
    if args.model == "openai":
        packages.append("openai")
    cell = _cell(args.telemetry, args.model)
    harness = Harness(
        cell.replace("autogen-", "autogen-multiagent-") if delegation else cell,
        packages,
        args.endpoint,
        args.record,
    )
    if args.telemetry != "openinference":
        trace.set_tracer_provider(harness.provider)
    if args.telemetry != "native":
        from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor

        AutogenAgentChatInstrumentor().instrument(tracer_provider=harness.provider)
    if delegation:
        _delegate(harness, args.model)
        harness.finish(
            requests=args.telemetry != "native" and args.model == "openai",
            arguments=args.telemetry != "native",
            delegation_tools=[MEMBER],
        )
        return 0

    get_weather, book_flight = harness.tools()
    for task, prompt, calls, answer in SCENARIO:
        model = _openai(calls, answer) if args.model == "openai" else _replay(calls, answer)
        agent = AssistantAgent(
            "assistant",
            model_client=model,
            tools=[get_weather, book_flight],
            reflect_on_tool_use=True,
        )
        with harness.invocation(task):
            asyncio.run(agent.run(task=prompt))
    # AutoGen's own `execute_tool` spans carry no arguments and no result; only OpenInference's LLM spans
    # (of the OpenAI client alone) show the model's requests.
    harness.finish(
        requests=args.telemetry != "native" and args.model == "openai",
        arguments=args.telemetry != "native",
        parallel_calls=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

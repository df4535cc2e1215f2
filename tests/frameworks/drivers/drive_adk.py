"""Google ADK through the shared scenario, traced by ADK's own OpenTelemetry spans or by OpenInference's.

The agent is an `LlmAgent` run by ADK's `InMemoryRunner`; its model is a minimal `BaseLlm` subclass
playing a script (`LlmResponse`s whose parts are `function_call`s with fixed ids, then text), so no
request leaves the machine but OTLP to `--endpoint`. The two weather calls come in one model turn
(ADK runs a turn's calls concurrently); `book_flight` raises with no `on_tool_error_callback`, which
ends the invocation with the tool's exception.

Instrumentation (`--instrumentation`): `native` is ADK's own tracer (scope `gcp.vertex.agent`), which
uses the global tracer provider, so the harness's provider is made global; `openinference` is
`openinference-instrumentation-google-adk`, given the harness's provider. OpenInference leaves some of
ADK's own spans to ADK's tracer and writes into them, so what it records depends on whether that
tracer has a provider: by default the global one is left unset (cell `adk-openinference`, no model
spans at all); `--global-provider` also makes it global, as `phoenix.otel.register` does (cell
`adk-openinference-global`). `--mode` with `openinference` adds the mode to the cell name.

ADK's telemetry modes (`--mode`, default `v2`), each set through ADK's environment variables:
- `v2`: ADK's default, telemetry schema v2 (`invoke_workflow` root, experimental GenAI semconv) with no
  content captured (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` unset);
- `v2-content`: schema v2 with content on spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=
  SPAN_ONLY`): `gen_ai.tool.call.arguments`/`.result`, `gen_ai.input.messages`/`.output.messages`;
- `v1`: the legacy schema (`ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`: `invocation` root, `call_llm`
  spans, `gcp.vertex.agent.*` content, which ADK captures by default);
- `v1-nocontent`: schema v1 with `ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false`;
- `v1-experimental`: schema v1 with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` and
  `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`.

`--scenario delegation` (cells `adk-multiagent-*`) plays the harness's delegation scenario: the leader
`coordinator` has the member `weather_agent` as a tool (`AgentTool`, which runs the member in a runner of
its own, inside the tool's span), and the member calls `get_weather`. With `--delegation transfer`
(cells `adk-multiagent-transfer-*`) the member is a sub-agent instead (`sub_agents`): the leader's model
calls ADK's `transfer_to_agent`, the member takes over the invocation and gives the final answer.

Run inside a virtualenv with tests/frameworks/requirements/adk.txt installed:
    python tests/frameworks/drivers/drive_adk.py --instrumentation native --mode v2-content \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncGenerator, Sequence
from typing import Any, NamedTuple

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
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import Field

# Every environment variable a mode may set; each mode sets its own and clears the rest.
_TELEMETRY_ENV = (
    "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN",
    "OTEL_SEMCONV_STABILITY_OPT_IN",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS",
)


class Mode(NamedTuple):
    env: dict[str, str]
    requests: bool  # whether the model's requested tool calls reach the spans


MODES: dict[str, Mode] = {
    "v2": Mode({"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "2"}, requests=False),
    "v2-content": Mode(
        {
            "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "2",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
        },
        requests=True,
    ),
    "v1": Mode({"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"}, requests=True),
    "v1-nocontent": Mode(
        {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1", "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false"},
        requests=False,
    ),
    "v1-experimental": Mode(
        {
            "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1",
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
        },
        requests=True,
    ),
}


def _set_mode(mode: str) -> None:
    """ADK reads these when it traces, not at import, so setting them before the first run is enough."""
    for name in _TELEMETRY_ENV:
        os.environ.pop(name, None)
    os.environ.update(MODES[mode].env)


class ScriptedModel(BaseLlm):
    """An ADK model that answers each turn with the next response of its script."""

    script: list[LlmResponse] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield self.script.pop(0)


def _turns(calls: Sequence[tuple[str, str, dict[str, Any]]], answer: str) -> list[LlmResponse]:
    requested = [
        types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))
        for call_id, name, args in calls
    ]
    return [
        LlmResponse(
            content=types.Content(role="model", parts=requested), finish_reason=types.FinishReason.STOP
        ),
        LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=answer)]),
            finish_reason=types.FinishReason.STOP,
        ),
    ]


async def _invoke(agent: LlmAgent, prompt: str) -> None:
    runner = InMemoryRunner(agent=agent, app_name="tracescore-drive-adk")
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="user")
    message = types.Content(role="user", parts=[types.Part(text=prompt)])
    try:
        async for _event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            pass
    finally:
        await runner.close()


async def _play(harness: Harness) -> None:
    get_weather, book_flight = harness.tools()

    for task, prompt, calls, answer in SCENARIO:
        agent = LlmAgent(
            name="travel_agent",
            description="Answers weather questions and books flights.",
            model=ScriptedModel(model="scripted", script=_turns(calls, answer)),
            instruction="Use the tools to answer.",
            tools=[get_weather, book_flight],
        )
        with harness.invocation(task):
            await _invoke(agent, prompt)


async def _delegate(harness: Harness, transfer: bool) -> None:
    """The delegation scenario: the member as the leader's tool (`AgentTool`), or its sub-agent."""
    from google.adk.tools.agent_tool import AgentTool

    member = LlmAgent(
        name=MEMBER,
        description="Answers weather questions.",
        model=ScriptedModel(model="scripted", script=_turns(MEMBER_CALLS, MEMBER_ANSWER)),
        instruction="Use the tools to answer.",
        tools=[harness.member_get_weather()],
    )
    if transfer:
        leader_calls = (("call_delegate", "transfer_to_agent", {"agent_name": MEMBER}),)
        # The member answers for the leader: the leader's model is asked only once.
        script = _turns(leader_calls, LEADER_ANSWER)[:1]
    else:
        leader_calls = (("call_delegate", MEMBER, {"request": MEMBER_REQUEST}),)
        script = _turns(leader_calls, LEADER_ANSWER)
    leader = LlmAgent(
        name=LEADER,
        description="Delegates weather questions.",
        model=ScriptedModel(model="scripted", script=script),
        instruction="Ask the weather agent.",
        tools=[] if transfer else [AgentTool(agent=member)],
        sub_agents=[member] if transfer else [],
    )
    with harness.invocation(DELEGATION_TASK):
        await _invoke(leader, DELEGATION_PROMPT)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--instrumentation", choices=("native", "openinference"), default="native")
    parser.add_argument("--mode", choices=tuple(MODES), default=None, help="ADK's telemetry mode; default v2")
    parser.add_argument(
        "--global-provider",
        action="store_true",
        help="openinference only: also make the provider global, as phoenix.otel.register does",
    )
    parser.add_argument("--scenario", choices=("single", "delegation"), default="single")
    parser.add_argument("--delegation", choices=("agent-tool", "transfer"), default="agent-tool")
    args = parser.parse_args(argv)
    if args.instrumentation == "native" and args.global_provider:
        parser.error("--global-provider is for openinference only (native always uses the global one)")
    mode = args.mode or "v2"
    packages = ["google-adk", "google-genai", "opentelemetry-sdk"]
    if args.instrumentation == "openinference":
        cell = "adk-openinference" + ("-global" if args.global_provider else "")
        cell += f"-{args.mode}" if args.mode is not None else ""
        packages.append("openinference-instrumentation-google-adk")
    else:
        cell = f"adk-native-{mode}"
    delegation = args.scenario == "delegation"
    if delegation:
        multiagent = "multiagent-transfer" if args.delegation == "transfer" else "multiagent"
        cell = cell.replace("adk-", f"adk-{multiagent}-", 1)
    harness = Harness(cell, packages, args.endpoint, args.record)
    _set_mode(mode)
    if args.instrumentation == "openinference":
        from openinference.instrumentation.google_adk import GoogleADKInstrumentor

        GoogleADKInstrumentor().instrument(tracer_provider=harness.provider)
    if args.instrumentation == "native" or args.global_provider:
        from opentelemetry import trace

        trace.set_tracer_provider(harness.provider)
    transfer = args.delegation == "transfer"
    asyncio.run(_delegate(harness, transfer) if delegation else _play(harness))
    # OpenInference records the model's turns only on spans ADK's own tracer opens (`call_llm` in schema v1,
    # `invoke_agent` in v2), which exist only when that tracer has the global provider.
    requests = args.global_provider if args.instrumentation == "openinference" else MODES[mode].requests
    # Natively, arguments are captured exactly when the model's turns are (one content switch for both).
    captured = args.instrumentation == "openinference" or MODES[mode].requests
    if delegation:
        tool = "transfer_to_agent" if transfer else MEMBER
        harness.finish(requests=requests, arguments=captured, delegation_tools=[tool])
    else:
        harness.finish(requests=requests, arguments=captured, parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

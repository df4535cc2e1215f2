"""LlamaIndex's `FunctionAgent` through the shared scenario, with OpenInference's instrumentation.

The agent is `llama_index.core.agent.workflow.FunctionAgent`, a workflow run on asyncio (`asyncio.run`
inside each invocation). The model is LlamaIndex's own `MockFunctionCallingLLM` given a response
generator that plays a script: an assistant message of `ToolCallBlock`s with fixed call ids (both
weather calls in one turn, which `FunctionAgent` runs in parallel), then the answer as text. The agent
streams the model's reply by default (`astream_chat_with_tools`); `--no-streaming` makes it call
`achat_with_tools` instead (the mock's `achat` calls its own `chat`, as LlamaIndex's `CustomLLM` does, so
each model turn is two nested LLM spans). Nothing leaves the machine but OTLP to `--endpoint`.

`--scenario delegation` (cell `llamaindex-multiagent-openinference`) plays the harness's delegation
scenario with LlamaIndex's `AgentWorkflow`: two `FunctionAgent`s, the root `coordinator` (which may hand
off to `weather_agent`) and `weather_agent` (with `get_weather`); the coordinator's model calls the
workflow's own `handoff` tool, and the member takes over and gives the final answer.

Run inside a virtualenv with tests/frameworks/requirements/llamaindex-openinference.txt installed:
    python tests/frameworks/drivers/drive_llamaindex.py \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

import asyncio
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
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor


class Script:
    """The model's replies, in order: the tool calls of one turn, then the final answer."""

    def __init__(self, calls: Sequence[tuple[str, str, dict[str, Any]]], answer: str) -> None:
        blocks = [
            ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=dict(args))
            for call_id, name, args in calls
        ]
        self._replies = [
            ChatMessage(role=MessageRole.ASSISTANT, blocks=list(blocks)),
            ChatMessage(role=MessageRole.ASSISTANT, content=answer),
        ]

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        return self._replies.pop(0)


async def _run(agent: FunctionAgent, prompt: str) -> str:
    return str(await agent.run(user_msg=prompt))


def _delegate(harness: Harness, streaming: bool) -> None:
    """The delegation scenario: an `AgentWorkflow` whose root agent hands off to the member."""
    from llama_index.core.agent.workflow import AgentWorkflow

    member = FunctionAgent(
        name=MEMBER,
        description="Answers weather questions.",
        tools=[FunctionTool.from_defaults(fn=harness.member_get_weather())],
        llm=MockFunctionCallingLLM(response_generator=Script(MEMBER_CALLS, MEMBER_ANSWER)),
        streaming=streaming,
    )
    handoff = {"to_agent": MEMBER, "reason": MEMBER_REQUEST}
    leader = FunctionAgent(
        name=LEADER,
        description="Delegates weather questions.",
        tools=[],
        llm=MockFunctionCallingLLM(
            response_generator=Script((("call_delegate", "handoff", handoff),), LEADER_ANSWER)
        ),
        can_handoff_to=[MEMBER],
        streaming=streaming,
    )
    workflow = AgentWorkflow(agents=[leader, member], root_agent=LEADER)

    async def run() -> str:
        return str(await workflow.run(user_msg=DELEGATION_PROMPT))

    with harness.invocation(DELEGATION_TASK):
        asyncio.run(run())


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--scenario", choices=("single", "delegation"), default="single")
    parser.add_argument(
        "--no-streaming", action="store_true", help="the agent calls achat_with_tools, not the stream"
    )
    args = parser.parse_args(argv)
    delegation = args.scenario == "delegation"
    cell = "llamaindex-nostream-openinference" if args.no_streaming else "llamaindex-openinference"
    harness = Harness(
        cell.replace("llamaindex-", "llamaindex-multiagent-") if delegation else cell,
        ["llama-index-core", "llama-index-workflows", "openinference-instrumentation-llama-index"],
        args.endpoint,
        args.record,
    )
    LlamaIndexInstrumentor().instrument(tracer_provider=harness.provider)
    if delegation:
        _delegate(harness, streaming=not args.no_streaming)
        harness.finish(requests=True, delegation_tools=["handoff"])
        return 0

    get_weather, book_flight = harness.tools()

    tools = [FunctionTool.from_defaults(fn=get_weather), FunctionTool.from_defaults(fn=book_flight)]
    for task, prompt, calls, answer in SCENARIO:
        llm = MockFunctionCallingLLM(response_generator=Script(calls, answer))
        agent = FunctionAgent(
            name="assistant",
            description="Answers with the weather and books flights.",
            tools=list(tools),
            llm=llm,
            streaming=not args.no_streaming,
        )
        with harness.invocation(task):
            asyncio.run(_run(agent, prompt))
    harness.finish(requests=True, parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

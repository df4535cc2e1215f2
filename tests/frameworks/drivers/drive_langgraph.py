"""LangGraph and LangChain through the shared scenario, with OpenInference's, OpenLLMetry's or OpenLIT's
instrumentation.

Shapes (`--shape`): `react` is LangGraph's prebuilt ReAct agent (`langgraph.prebuilt.create_react_agent`),
`stategraph` a hand-built `StateGraph` with a `ToolNode`, `create_agent` LangChain 1.x's
`langchain.agents.create_agent`. `--scenario delegation` (cells `langgraph-multiagent-*`) plays the
harness's delegation scenario with LangGraph's tool-calling supervisor pattern: the leader is a prebuilt
ReAct agent named `coordinator` whose tool `weather_agent` invokes the member, a prebuilt ReAct agent
named `weather_agent` with `get_weather`. With `--delegation subgraph` (cells
`langgraph-multiagent-subgraph-*`) the member is instead a node of the leader's graph: a `StateGraph`
named `coordinator` whose node `weather_agent` is the member's compiled graph, then a node where the
leader's model answers. The model is LangChain's own `GenericFakeChatModel` playing a script
(tool calls with fixed ids, then text); its `bind_tools` keeps the script, since a fake model has no tool
schema to send anywhere. Nothing leaves the machine but OTLP to `--endpoint`.

Run inside a virtualenv with tests/frameworks/requirements/<cell>.txt installed:
    python tests/frameworks/drivers/drive_langgraph.py --shape react --instrumentation openinference \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/<cell>
"""

from __future__ import annotations

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
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool

SHAPES = ("react", "stategraph", "create_agent")


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, which may be given tools (the script decides what it calls)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


def _turns(calls: Sequence[tuple[str, str, dict[str, Any]]], answer: str) -> list[BaseMessage]:
    requested = [
        {"name": name, "args": args, "id": call_id, "type": "tool_call"} for call_id, name, args in calls
    ]
    return [AIMessage(content="", tool_calls=requested), AIMessage(content=answer)]


def _instrument(name: str, harness: Harness) -> None:
    if name == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=harness.provider)
    elif name == "openlit":
        # OpenLIT reuses the global tracer provider when one is set (openlit 1.45, `otel/tracing.py`), as an
        # application that already exports its traces would have it; no metrics or events, and a local
        # (empty) price list so that nothing is fetched.
        import json
        import tempfile

        import openlit
        from opentelemetry import trace

        trace.set_tracer_provider(harness.provider)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as prices:
            json.dump({}, prices)
        openlit.init(
            application_name=harness.cell, disable_metrics=True, disable_events=True, pricing_json=prices.name
        )
    else:
        # OpenLLMetry (opentelemetry-instrumentation-langchain) captures content unless the environment
        # sets TRACELOOP_TRACE_CONTENT=false; by default it writes it as span attributes, not log events.
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=harness.provider)


def _agent(shape: str, model: ScriptedChatModel, tools: list[Any]) -> Any:
    if shape == "react":
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(model, tools)
    if shape == "create_agent":
        from langchain.agents import create_agent

        return create_agent(model, tools)
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile()


def _delegate(harness: Harness, subgraph: bool) -> None:
    """The delegation scenario: a supervisor agent whose tool runs the member agent, or a graph of which
    the member is a node."""
    from langgraph.prebuilt import create_react_agent

    member_get_weather = harness.member_get_weather()
    member = create_react_agent(
        ScriptedChatModel(messages=iter(_turns(MEMBER_CALLS, MEMBER_ANSWER))),
        [tool(member_get_weather)],
        name=MEMBER,
    )

    if subgraph:
        from langgraph.graph import END, START, MessagesState, StateGraph

        leader_model = ScriptedChatModel(messages=iter([AIMessage(content=LEADER_ANSWER)]))

        def answer(state: MessagesState) -> dict[str, list[BaseMessage]]:
            return {"messages": [leader_model.invoke(state["messages"])]}

        graph = StateGraph(MessagesState)
        graph.add_node(MEMBER, member)
        graph.add_node("answer", answer)
        graph.add_edge(START, MEMBER)
        graph.add_edge(MEMBER, "answer")
        graph.add_edge("answer", END)
        with harness.invocation(DELEGATION_TASK):
            graph.compile(name=LEADER).invoke({"messages": [("user", MEMBER_REQUEST)]})
        return

    @tool(MEMBER)
    def weather_agent(request: str) -> str:
        """Ask the weather agent."""
        answer = member.invoke({"messages": [("user", request)]})
        return str(answer["messages"][-1].content)

    leader_calls = (("call_delegate", MEMBER, {"request": MEMBER_REQUEST}),)
    leader = create_react_agent(
        ScriptedChatModel(messages=iter(_turns(leader_calls, LEADER_ANSWER))), [weather_agent], name=LEADER
    )
    with harness.invocation(DELEGATION_TASK):
        leader.invoke({"messages": [("user", DELEGATION_PROMPT)]})


def _shape_name(args: Any) -> str:
    if args.scenario != "delegation":
        return str(args.shape)
    return "multiagent-subgraph" if args.delegation == "subgraph" else "multiagent"


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--shape", choices=SHAPES, default="react")
    parser.add_argument("--scenario", choices=("single", "delegation"), default="single")
    parser.add_argument("--delegation", choices=("tool", "subgraph"), default="tool")
    parser.add_argument(
        "--instrumentation", choices=("openinference", "openllmetry", "openlit"), default="openinference"
    )
    args = parser.parse_args(argv)
    instrumentation_package = {
        "openinference": "openinference-instrumentation-langchain",
        "openllmetry": "opentelemetry-instrumentation-langchain",
        "openlit": "openlit",
    }[args.instrumentation]
    delegation = args.scenario == "delegation"
    harness = Harness(
        f"langgraph-{_shape_name(args)}-{args.instrumentation}",
        ["langgraph", "langchain-core", "langchain", instrumentation_package],
        args.endpoint,
        args.record,
    )
    shape, instrumentation = args.shape, args.instrumentation
    _instrument(instrumentation, harness)
    if delegation:
        subgraph = args.delegation == "subgraph"
        _delegate(harness, subgraph)
        harness.finish(requests=True, delegation_tools=[] if subgraph else [MEMBER])
        return 0

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return harness.get_weather(city)

    @tool
    def book_flight(destination: str, passengers: int) -> str:
        """Book a flight for some passengers."""
        return harness.book_flight(destination, passengers)

    tools = [get_weather, book_flight]
    for task, prompt, calls, answer in SCENARIO:
        model = ScriptedChatModel(messages=iter(_turns(calls, answer)))
        agent = _agent(shape, model, tools)
        with harness.invocation(task):
            agent.invoke({"messages": [("user", prompt)]})
    harness.finish(requests=True, parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

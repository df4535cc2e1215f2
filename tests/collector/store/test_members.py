"""Member agents found at run resolution: the shapes the framework matrix's delegation cells record,
cut down to the spans that decide them, and their edges (tests/frameworks/ holds the recordings).

Each span is recognised as the collector recognises it (`collector.recognise.span.recognise`) and the
trace resolved as the writer resolves it, so these hold the rules of docs/conventions.md ("Runs, tasks,
agents") on one trace at a time.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from collector.model.domain import Resource, Span
from collector.recognise.span import recognise
from collector.store._resolve import Resolution, resolve_trace

TRACE = "0" * 31 + "1"
LANGCHAIN = "openinference.instrumentation.langchain"
OPENLLMETRY = "opentelemetry.instrumentation.langchain"
ADK = "gcp.vertex.agent"


def _span(span_id: str, parent: str | None, name: str, scope: str, start: int, **attributes: Any) -> Span:
    return Span(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=1,
        start_ns=start,
        end_ns=1000 - start,
        status_code=0,
        status_message="",
        attributes=attributes,
        events=(),
        links=(),
        resource=Resource({"service.name": "members"}, scope, ""),
    )


def _metadata(node: str | None = None, namespace: str | None = None) -> str:
    metadata: dict[str, Any] = {"ls_integration": "langgraph"}
    if node is not None:
        metadata |= {"langgraph_node": node, "langgraph_checkpoint_ns": namespace}
    return json.dumps(metadata)


def _resolve(*spans: Span) -> Resolution:
    recognised = [recognise(span) for span in spans]
    return resolve_trace(
        TRACE,
        {r.node.span_id: r.node for r in recognised},
        [e for r in recognised for e in r.executions],
        [request for r in recognised for request in r.requests],
    )


def _paths(resolution: Resolution) -> dict[str, str | None]:
    return {e.execution.tool_name: e.placement.agent_path for e in resolution.executions}


def _tool(span_id: str, parent: str, name: str, start: int, metadata: str, kind: str = "TOOL") -> Span:
    return _span(
        span_id,
        parent,
        name,
        LANGCHAIN,
        start,
        **{"openinference.span.kind": kind, "tool.name": name, "input.value": "{}", "metadata": metadata},
    )


def test_a_langgraph_agent_run_by_a_tool_is_a_member_and_its_tool_is_the_leaders() -> None:
    """The supervisor pattern through OpenInference: the member graph's own span carries only the
    namespace of the tool node it runs in; its nodes one segment more. The tool whose name holds
    `agent` is given the kind AGENT by OpenInference's LangChain instrumentation: it is still a tool."""
    outer_tools = _metadata("tools", "tools:1")
    resolution = _resolve(
        _span(
            "a",
            None,
            "coordinator",
            LANGCHAIN,
            1,
            **{"openinference.span.kind": "CHAIN", "metadata": _metadata()},
        ),
        _span(
            "b", "a", "tools", LANGCHAIN, 2, **{"openinference.span.kind": "CHAIN", "metadata": outer_tools}
        ),
        _tool("c", "b", "weather_agent", 3, outer_tools, kind="AGENT"),
        _span(
            "d",
            "c",
            "weather_agent",
            LANGCHAIN,
            4,
            **{"openinference.span.kind": "AGENT", "metadata": outer_tools},
        ),
        _span(
            "e",
            "d",
            "tools",
            LANGCHAIN,
            5,
            **{"openinference.span.kind": "CHAIN", "metadata": _metadata("tools", "tools:1|tools:2")},
        ),
        _tool("f", "e", "get_weather", 6, _metadata("tools", "tools:1|tools:2")),
    )
    assert _paths(resolution) == {"weather_agent": "coordinator", "get_weather": "coordinator/weather_agent"}
    assert [run.agent_name for run in resolution.runs] == ["coordinator"]


def test_a_subgraph_added_as_a_node_is_a_member_named_after_its_node() -> None:
    """OpenLLMetry: the node span is both the outer graph's node and the subgraph's run."""
    ns = "traceloop.association.properties.langgraph_checkpoint_ns"
    graph = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "planner"}
    node = {"traceloop.span.kind": "task", "traceloop.entity.name": "research", ns: "research:1"}
    inner = {"traceloop.span.kind": "task", "traceloop.entity.name": "tools", ns: "research:1|tools:2"}
    tool = {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "search",
        "traceloop.entity.input": "{}",
        ns: "research:1|tools:2",
    }
    resolution = _resolve(
        _span("a", None, "planner.workflow", OPENLLMETRY, 1, **graph),
        _span("b", "a", "research.task", OPENLLMETRY, 2, **node),
        _span("c", "b", "tools.task", OPENLLMETRY, 3, **inner),
        _span("d", "c", "search.tool", OPENLLMETRY, 4, **tool),
    )
    assert _paths(resolution) == {"search": "planner/research"}


def test_the_nodes_of_one_graph_are_no_members() -> None:
    """Spans inside a node share its namespace depth: only a deeper namespace below makes a member."""
    node = _metadata("tools", "tools:1")
    resolution = _resolve(
        _span(
            "a",
            None,
            "LangGraph",
            LANGCHAIN,
            1,
            **{"openinference.span.kind": "CHAIN", "metadata": _metadata()},
        ),
        _span("b", "a", "tools", LANGCHAIN, 2, **{"openinference.span.kind": "CHAIN", "metadata": node}),
        _span(
            "c",
            "b",
            "RunnableSequence",
            LANGCHAIN,
            3,
            **{"openinference.span.kind": "CHAIN", "metadata": node},
        ),
        _tool("d", "c", "get_weather", 4, node),
    )
    assert _paths(resolution) == {"get_weather": "LangGraph"}


def _adk_agent(span_id: str, parent: str, name: str, start: int) -> Span:
    return _span(
        span_id,
        parent,
        f"invoke_agent {name}",
        ADK,
        start,
        **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
    )


def _adk_tool(span_id: str, parent: str, name: str, start: int) -> Span:
    return _span(
        span_id,
        parent,
        f"execute_tool {name}",
        ADK,
        start,
        **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": span_id},
    )


def _llm(span_id: str, parent: str, start: int) -> Span:
    return _span(
        span_id, parent, "generate_content scripted", ADK, start, **{"gcp.vertex.agent.invocation_id": "e-1"}
    )


def test_an_adk_workflow_makes_a_transfer_one_run_led_by_its_root_agent() -> None:
    """Schema v2: `invoke_workflow {root}`, the root agent and the sub-agent it transferred to as siblings."""
    workflow = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "coordinator"}
    resolution = _resolve(
        _span("r", None, "rollout", "harness", 0, **{"tracescore.task.id": "delegation"}),
        _span("w", "r", "invoke_workflow coordinator", ADK, 1, **workflow),
        _adk_agent("a", "w", "coordinator", 2),
        _llm("l1", "a", 3),
        _adk_tool("t1", "a", "transfer_to_agent", 4),
        _adk_agent("b", "w", "weather_agent", 5),
        _llm("l2", "b", 6),
        _adk_tool("t2", "b", "get_weather", 7),
    )
    assert _paths(resolution) == {
        "transfer_to_agent": "coordinator",
        "get_weather": "coordinator/weather_agent",
    }
    assert [(run.run_id, run.agent_name, run.task_id) for run in resolution.runs] == [
        ("e-1", "coordinator", "delegation")
    ]


def test_an_unnamed_invocation_is_named_after_the_first_agent_it_runs() -> None:
    """Schema v1: a bare `invocation` span; the first agent under it is the root, whatever its start."""
    resolution = _resolve(
        _span("w", None, "invocation", ADK, 1),
        _adk_agent("b", "w", "weather_agent", 5),
        _adk_tool("t2", "b", "get_weather", 7),
        _adk_agent("a", "w", "coordinator", 2),
        _adk_tool("t1", "a", "transfer_to_agent", 4),
    )
    assert _paths(resolution) == {
        "transfer_to_agent": "coordinator",
        "get_weather": "coordinator/weather_agent",
    }
    assert [run.agent_name for run in resolution.runs] == ["coordinator"]


def test_an_invocation_that_runs_no_agent_is_no_agent() -> None:
    resolution = _resolve(_span("w", None, "invocation", ADK, 1), _adk_tool("t", "w", "get_weather", 2))
    assert _paths(resolution) == {"get_weather": None}
    assert [run.agent_name for run in resolution.runs] == [None]


def _genai(span_id: str, parent: str | None, operation: str, name: str, start: int) -> Span:
    key = "gen_ai.agent.name" if operation == "invoke_agent" else "gen_ai.tool.name"
    return _span(
        span_id,
        parent,
        f"{operation} {name}",
        "tests",
        start,
        **{"gen_ai.operation.name": operation, key: name},
    )


def _beside_the_tool(member: str) -> Resolution:
    """OpenLLMetry's OpenAI Agents shape: the member agent opened under the workflow, beside the leader,
    while the leader's tool span is open."""
    return _resolve(
        _span("w", None, "Agent Workflow", "tests", 0),
        _genai("a", "w", "invoke_agent", "coordinator", 1),
        _genai("t", "a", "execute_tool", "weather_agent", 10),
        _genai("m", "w", "invoke_agent", member, 20),
        _genai("g", "m", "execute_tool", "get_weather", 30),
    )


def test_an_agent_a_tool_ran_beside_it_is_a_member_of_the_tools_agent() -> None:
    resolution = _beside_the_tool("weather_agent")
    assert _paths(resolution) == {"weather_agent": "coordinator", "get_weather": "coordinator/weather_agent"}
    assert [(run.agent_name, run.n_executions) for run in resolution.runs] == [("coordinator", 2)]


def test_an_agent_of_another_name_beside_a_tool_stays_where_it_is() -> None:
    resolution = _beside_the_tool("booking_agent")
    assert _paths(resolution) == {"weather_agent": "coordinator", "get_weather": "booking_agent"}


def test_an_agent_a_tool_ran_is_its_member_though_it_ends_just_after_the_tool() -> None:
    # LangChain.js under OpenInference JS: the member graph's span is the rollout's child, and the tool's
    # span may end first (callback order); it started while the tool ran, so it is the tool's agent.
    spans = [
        _span("w", None, "Agent Workflow", "tests", 0),
        _genai("a", "w", "invoke_agent", "coordinator", 1),
        _genai("t", "a", "execute_tool", "weather_agent", 10),
        replace(_genai("m", "w", "invoke_agent", "weather_agent", 20), end_ns=991),  # the tool ends at 990
        _genai("g", "m", "execute_tool", "get_weather", 30),
    ]
    assert _paths(_resolve(*spans)) == {
        "weather_agent": "coordinator",
        "get_weather": "coordinator/weather_agent",
    }
    # One that starts after the tool ended is not the tool's agent.
    late = [
        *spans[:3],
        replace(spans[3], start_ns=995, end_ns=998),
        replace(spans[4], start_ns=996, end_ns=997),
    ]
    assert _paths(_resolve(*late)) == {"weather_agent": "coordinator", "get_weather": "weather_agent"}


# --- CrewAI: a coworker run by a delegation tool, named only by the tool's arguments --------------------

CREWAI = "openinference.instrumentation.crewai"


def _crewai_tool(span_id: str, parent: str, name: str, start: int, arguments: dict[str, Any]) -> Span:
    return _span(
        span_id,
        parent,
        f"{name}.run",
        CREWAI,
        start,
        **{"openinference.span.kind": "TOOL", "tool.name": name, "input.value": json.dumps(arguments)},
    )


def _crew(coworker: str, question: str = "task") -> Resolution:
    return _resolve(
        _span("c", None, "Crew.kickoff", CREWAI, 0, **{"openinference.span.kind": "CHAIN"}),
        _span(
            "l",
            "c",
            "coordinator._execute_core",
            CREWAI,
            1,
            **{"openinference.span.kind": "AGENT", "graph.node.id": "coordinator"},
        ),
        _crewai_tool(
            "d",
            "l",
            "Delegate work to coworker",
            2,
            {question: "What is the weather in Paris?", "context": "", "coworker": coworker},
        ),
        _crewai_tool("w", "d", "get_weather", 3, {"city": "Paris"}),
        _crewai_tool("b", "l", "book_flight", 4, {"destination": "Oslo"}),
    )


def test_a_crewai_coworker_runs_the_calls_below_its_delegation_and_the_delegation_is_the_leaders() -> None:
    assert _paths(_crew("weather_agent")) == {
        "Delegate work to coworker": "coordinator",
        "get_weather": "coordinator/weather_agent",
        "book_flight": "coordinator",
    }
    # `Ask question to coworker` takes a question; a list written as text runs its first agent.
    assert _paths(_crew("[weather_agent, booker]", "question"))["get_weather"] == "coordinator/weather_agent"
    assert {r.agent_name for r in _crew("weather_agent").runs} == {"coordinator"}


def test_a_tool_whose_arguments_name_a_coworker_without_a_task_delegates_nothing() -> None:
    """Only the delegation tools' own arguments (`coworker` beside `task` or `question`) name an agent."""
    assert _paths(_crew("weather_agent", "topic"))["get_weather"] == "coordinator"


# --- smolagents: a managed agent's call is only the member's own AGENT span -----------------------------

SMOLAGENTS = "openinference.instrumentation.smolagents"


def _smol_agent(span_id: str, parent: str | None, name: str, start: int, **attributes: Any) -> Span:
    return _span(
        span_id,
        parent,
        f"{name}.run",
        SMOLAGENTS,
        start,
        **{"openinference.span.kind": "AGENT", "input.value": '{"task": "You are a managed agent"}'},
        **attributes,
    )


def _smol_step(span_id: str, parent: str, start: int) -> Span:
    return _span(span_id, parent, "Step 1", SMOLAGENTS, start, **{"openinference.span.kind": "CHAIN"})


def _smol_request(span_id: str, parent: str, start: int, tool: str, arguments: str) -> Span:
    prefix = "llm.output_messages.0.message"
    return _span(
        span_id,
        parent,
        "Model.generate",
        SMOLAGENTS,
        start,
        **{
            "openinference.span.kind": "LLM",
            f"{prefix}.role": "assistant",
            f"{prefix}.tool_calls.0.tool_call.id": "call_1",
            f"{prefix}.tool_calls.0.tool_call.function.name": tool,
            f"{prefix}.tool_calls.0.tool_call.function.arguments": arguments,
        },
    )


def test_a_managed_agent_s_run_is_its_caller_s_call_of_it() -> None:
    resolution = _resolve(
        _smol_agent("l", None, "coordinator", 0),
        _smol_step("s", "l", 1),
        _smol_request("m", "s", 2, "weather_agent", '{"task": "Paris?"}'),
        _smol_agent("w", "s", "weather_agent", 3, **{"output.value": "18°C"}),
        _smol_step("ws", "w", 4),
        _tool("t", "ws", "get_weather", 5, "{}"),
    )
    assert _paths(resolution) == {"weather_agent": "coordinator", "get_weather": "coordinator/weather_agent"}
    (call,) = [e for e in resolution.executions if e.execution.tool_name == "weather_agent"]
    assert (call.call_id, call.call_id_source) == ("call_1", "request")
    assert (call.arguments.value, call.arguments_source) == ({"task": "Paris?"}, "request")
    assert call.execution.result == "18°C"
    assert [r.execution_span_id for r in resolution.requests] == ["w"]
    assert {r.agent_name for r in resolution.runs} == {"coordinator"}


def test_an_agent_nobody_called_is_no_call() -> None:
    resolution = _resolve(_smol_agent("l", None, "coordinator", 0), _smol_step("s", "l", 1))
    assert resolution.executions == []

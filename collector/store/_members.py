"""Agents that no agent span of their own shows, found from the shape of the whole trace.

Run resolution (`_resolve`) takes a span as an agent when recognition said so, one span at a time. Four
multi-agent shapes need the trace around a span (docs/conventions.md, "Runs, tasks, agents"): a LangGraph
graph run inside another graph's node, told by its children's deeper checkpoint namespace; a workflow
that does not name its agent (ADK's schema v1 `invocation`), named after the first agent it runs; an
agent that a tool ran, recorded beside that tool's span instead of inside it; and an agent that a tool
ran, named only by that tool's arguments, with no span of its own (CrewAI's coworkers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from collector.model.domain import UNNAMED_WORKFLOW, AgentInfo, SpanNode, ToolExecution


def with_hidden_agents(nodes: dict[str, SpanNode]) -> dict[str, SpanNode]:
    """The trace's nodes with those agents made agents (a new dict only when there are any)."""
    return named_workflows(nested_graphs(coworkers(nodes)))


def coworkers(nodes: dict[str, SpanNode]) -> dict[str, SpanNode]:
    """The nodes with each span directly below a tool that runs another agent (`delegates_to`) made that
    agent, unless it is an agent already: the calls made below it are the member's, and the tool call
    itself stays its caller's.

    OpenInference's CrewAI wrappers (openinference-instrumentation-crewai 1.1.21) open no span for the
    coworker a delegation runs: they wrap `Task._execute_core`, and `Delegate work to coworker` calls
    `Agent.execute_task`, so the coworker's tool spans hang straight below the delegation's."""
    delegating = {n.span_id: n.delegates_to for n in nodes.values() if n.delegates_to}
    if not delegating:
        return nodes
    members = {
        node.span_id: replace(node, agent=AgentInfo(coworker, None))
        for node in nodes.values()
        if node.agent is None and (coworker := delegating.get(node.parent_span_id or ""))
    }
    return {**nodes, **members} if members else nodes


def nested_graphs(nodes: dict[str, SpanNode]) -> dict[str, SpanNode]:
    """The nodes with each LangGraph graph run inside another graph's node made an agent (a member).

    Such a graph's own span carries only the namespace of the node it runs in; its nodes' spans, its
    children, have one segment more. Without this the member's tools would count as the outer graph's:
    both OpenInference and OpenLLMetry record the inner graph as a plain chain (OpenLLMetry's own
    `invoke_agent` span for it hangs beside that chain, not above it)."""
    members: dict[str, SpanNode] = {}
    for node in nodes.values():
        if node.graph_depth < 2 or node.parent_span_id is None:
            continue
        parent = nodes.get(node.parent_span_id)
        if (
            parent is not None
            and parent.agent is None
            and parent.graph_name
            and parent.graph_depth == node.graph_depth - 1
            and parent.span_id not in members
        ):
            members[parent.span_id] = replace(parent, agent=AgentInfo(parent.graph_name, None))
    return {**nodes, **members} if members else nodes


def named_workflows(nodes: dict[str, SpanNode]) -> dict[str, SpanNode]:
    """The nodes with each workflow that does not name its agent (ADK schema v1's `invocation`) named after
    the first agent it runs, its root agent; one that runs no agent is no agent either."""
    unnamed = {n.span_id for n in nodes.values() if n.agent is not None and n.agent.name == UNNAMED_WORKFLOW}
    if not unnamed:
        return nodes
    first: dict[str, SpanNode] = {}
    for node in nodes.values():
        parent = node.parent_span_id
        if parent in unnamed and node.agent is not None and node.agent.name != UNNAMED_WORKFLOW:
            earliest = first.get(parent)
            if earliest is None or node.start_ns < earliest.start_ns:
                first[parent] = node
    named = {}
    for span_id in unnamed:
        workflow = nodes[span_id]
        root = first.get(span_id)
        run_id = workflow.agent.run_id if workflow.agent else None
        agent = AgentInfo(root.agent.name, run_id) if root and root.agent else None
        named[span_id] = replace(workflow, agent=agent)
    return {**nodes, **named}


def agents_run_by_tools(
    nodes: dict[str, SpanNode], executions: Sequence[ToolExecution]
) -> dict[str, SpanNode]:
    """The nodes with each agent that a tool of the same name ran, but that was recorded beside that tool
    rather than inside it, moved under the tool's span: a member of the agent that called the tool.

    OpenLLMetry's OpenAI Agents instrumentation (opentelemetry-instrumentation-openai-agents 0.62.4) opens
    an agent used as a tool (`Agent.as_tool`) as a sibling of the leader, under the workflow span, while
    the leader's tool span of that name is open: nested by time, not by parent. Without the move the
    member would be a second top-level agent of the run. An agent already below the tool is left as is.

    The agent must start while the tool's span is open; it may end after it. OpenInference's
    LangChain.js instrumentation (4.1.1) loses the context inside a graph run as a tool, so the member
    graph's span is the rollout's child, not the tool's, and which of the two ends first depends on the
    order the callbacks run in (measured: the graph 0.3 ms after the tool in one live run of three)."""
    calls = [e for e in executions if e.tool_name and not e.agent_call]  # an agent's own span runs itself
    if not calls:
        return nodes
    moved: dict[str, SpanNode] = {}
    for node in nodes.values():
        if node.agent is None:
            continue
        for call in calls:
            if (
                call.tool_name == node.agent.name
                and call.span_id in nodes
                and call.start_ns <= node.start_ns <= call.end_ns
                and call.span_id not in _ancestors(nodes, node.span_id)
                and node.span_id not in _ancestors(nodes, call.span_id)
            ):
                moved[node.span_id] = replace(node, parent_span_id=call.span_id)
                break
    return {**nodes, **moved} if moved else nodes


def _ancestors(nodes: dict[str, SpanNode], span_id: str) -> set[str]:
    seen: set[str] = set()
    current = nodes[span_id].parent_span_id if span_id in nodes else None
    while current is not None and current in nodes and current not in seen:
        seen.add(current)
        current = nodes[current].parent_span_id
    return seen

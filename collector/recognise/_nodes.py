"""The per-span facts run resolution needs: is it an agent, which run and task does it name."""

from __future__ import annotations

from typing import Any

from collector.model.domain import AgentInfo, Span, SpanNode

# Keys that carry a framework's own id for one agent run (DESIGN §4).
_AGENT_RUN_ID_KEYS = ("gen_ai.agent.call.id", "agno.run.id", "gcp.vertex.agent.invocation_id")
_AGENT_NAME_KEYS = (
    "gen_ai.agent.name",
    "agent.name",
    "graph.node.name",
    "agent_name",
    "traceloop.entity.name",
)
_SESSION_KEYS = (
    "session.id",
    "gen_ai.conversation.id",
    "traceloop.association.properties.session_id",
    "tracescore.session.id",
)


def _first_text(attrs: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    return None


# OpenInference's processor for the OpenAI Agents SDK: it opens one AGENT span per SDK trace (the workflow,
# named after the trace, no `agent.name`) above the real agent spans.
_OPENAI_AGENTS_SCOPE = "openinference.instrumentation.openai_agents"


def _openai_agents_workflow(span: Span) -> bool:
    return span.resource.scope_name == _OPENAI_AGENTS_SCOPE and "agent.name" not in span.attributes


def is_agent_span(span: Span) -> bool:
    attrs = span.attributes
    if attrs.get("openinference.span.kind") == "AGENT" and _openai_agents_workflow(span):
        return False  # the workflow is not an agent: it would head every agent path and hide the leader
    return (
        attrs.get("gen_ai.operation.name") == "invoke_agent"
        or attrs.get("openinference.span.kind") == "AGENT"
        or attrs.get("traceloop.span.kind") in ("agent", "workflow")
        or span.name == "agent run"  # pydantic-ai instrumentation v2
    )


def _agent_run_id(span: Span) -> str | None:
    run_id = _first_text(span.attributes, _AGENT_RUN_ID_KEYS)
    if run_id is None and span.resource.scope_name == _OPENAI_AGENTS_SCOPE:
        # No run id is exported; one SDK trace is one workflow, so the agents a handoff chains (siblings
        # under the workflow) stay one run.
        return span.trace_id
    return run_id


def _agent_name(span: Span) -> str:
    name = _first_text(span.attributes, _AGENT_NAME_KEYS)
    if name:
        return name
    for prefix in ("invoke_agent ", "agent run"):
        if span.name.startswith(prefix) and span.name != prefix.strip():
            return span.name.removeprefix(prefix)
    return span.name.removesuffix(".run").removesuffix(".agent")


# Any of these on a span makes it more than a plain link in the tree.
_NODE_KEYS = frozenset(
    {"tracescore.run.id", "tracescore.task.id", "gcp.vertex.agent.invocation_id", *_SESSION_KEYS}
)


def _resource_task(span: Span) -> str | None:
    value = span.resource.attributes.get("tracescore.task.id")
    return None if value is None or value == "" else str(value)


def span_node(span: Span) -> SpanNode:
    attrs = span.attributes
    if span.parent_span_id is not None and _NODE_KEYS.isdisjoint(attrs) and not is_agent_span(span):
        # Most spans (tools, chats) only place themselves under their parent: skip the key lookups.
        return SpanNode(
            span.span_id,
            span.parent_span_id,
            span.start_ns,
            span.end_ns,
            None,
            None,
            _resource_task(span),
            None,
            span.resource.service_name,
        )
    agent = None
    if is_agent_span(span):
        agent = AgentInfo(name=_agent_name(span), run_id=_agent_run_id(span))
    keep_attributes = agent is not None or span.parent_span_id is None
    task = _first_text(attrs, ("tracescore.task.id",)) or _resource_task(span)
    return SpanNode(
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        agent=agent,
        explicit_run_id=_first_text(attrs, ("tracescore.run.id",)),
        task_id=task,
        session_id=_first_text(attrs, _SESSION_KEYS),
        service_name=span.resource.service_name,
        attributes_for_select={**span.resource.attributes, **attrs} if keep_attributes else {},
        inner_run_id=_first_text(attrs, ("gcp.vertex.agent.invocation_id",)) if agent is None else None,
    )

"""OpenInference's instrumentation of the OpenAI Agents SDK for JavaScript, where it differs from Python's.

`@arizeai/openinference-instrumentation-openai-agents` 0.2.15 (`processor.ts`) is a `TracingProcessor`
of `@openai/agents` like its Python twin, with the same span kinds and tool attributes, but it marks
agents otherwise: `onTraceStart` opens the SDK trace's root span (named after the trace, `Agent
workflow` by default) with kind AGENT and nothing else, and each agent span carries its name as
`graph.node.id` (`applyAgentGraphAttributes`), never `agent.name`. The root is the workflow, not an
agent: taken as one, it would head every agent path and hide the real agent, as the Python one would.
"""

from __future__ import annotations

from collector.model.domain import Span

SCOPE = "@arizeai/openinference-instrumentation-openai-agents"


def is_workflow(span: Span) -> bool:
    """The SDK trace's root span: kind AGENT with no `graph.node.id`."""
    attrs = span.attributes
    return (
        span.resource.scope_name == SCOPE
        and attrs.get("openinference.span.kind") == "AGENT"
        and "graph.node.id" not in attrs
    )


# A handoff is a TOOL span `handoff to {agent}` as in Python, but named as a tool too: `tool.name =
# handoff_to_{agent}` (`getHandoffAttributes`), with `input.value` `{"from_agent": …}` and `output.value`
# `{"to_agent": …}`: no arguments of the model's call.
HANDOFF_PREFIX = "handoff to "


def handoff_target(span: Span) -> str | None:
    """The agent a handoff span of this processor hands off to; None for any other span."""
    if span.resource.scope_name != SCOPE or not span.name.startswith(HANDOFF_PREFIX):
        return None
    target = span.name.removeprefix(HANDOFF_PREFIX)
    return target if span.attributes.get("tool.name") in (None, f"handoff_to_{target}") else None

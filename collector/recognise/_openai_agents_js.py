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

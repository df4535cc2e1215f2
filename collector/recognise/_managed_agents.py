"""smolagents' managed agents: an agent called as a tool by another agent, with no tool span of its own.

A smolagents agent given `managed_agents` offers each to its model as a tool named after the agent
(smolagents 1.26, `agents.py`: `MultiStepAgent.__call__` wraps the task in the `managed_agent` prompt and
calls `run`). openinference-instrumentation-smolagents (0.1.43, `_wrappers.py`) wraps `Tool.__call__`, so
a tool's call has a TOOL span, but a managed agent's call is only the member's own AGENT span `NAME.run`,
opened by `MultiStepAgent.run` inside the caller's step. That span is read as the call of tool `NAME`
too, marked `agent_call`: run resolution keeps it only where another agent is above it (a top-level
agent was called by nobody) and places it with its caller. Its arguments are left to the request it
joins (`input.value` is the task wrapped in the managed-agent prompt, not what the model asked); its
result is the agent's answer, its error the span's.
"""

from __future__ import annotations

from collector.model.domain import NO_ARGUMENTS, STATUS_ERROR, Span, ToolExecution

_SMOLAGENTS_SCOPE = "openinference.instrumentation.smolagents"
_RUN_SUFFIX = ".run"


def managed_agent_call(span: Span) -> ToolExecution | None:
    """The call of a smolagents agent as a tool that its AGENT span records, or None."""
    attrs = span.attributes
    if span.resource.scope_name != _SMOLAGENTS_SCOPE or attrs.get("openinference.span.kind") != "AGENT":
        return None
    name = span.name.removesuffix(_RUN_SUFFIX)
    if name == span.name or not name:
        return None
    error = span.status_code == STATUS_ERROR
    exception = next((e.attributes for e in span.events if e.name == "exception"), None)
    message = exception.get("exception.message") if exception else None
    return ToolExecution(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        tool_name=name,
        call_id=None,
        arguments=NO_ARGUMENTS,
        result=None if error else attrs.get("output.value"),
        error=error,
        error_type=str(exception.get("exception.type")) if error and exception else None,
        error_message=(str(message) if message else span.status_message or None) if error else None,
        paused=False,
        pause_reason=None,
        from_history=False,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        convention="openinference",
        service_name=span.resource.service_name,
        scope_name=span.resource.scope_name,
        agent_call=True,
    )

"""Everything recognition reads off one span, from the wire or re-read from the `spans` table."""

from __future__ import annotations

from dataclasses import dataclass

from collector.model.domain import Span, SpanNode, ToolExecution, ToolOutcome, ToolRequest, compact_pickle
from collector.recognise._managed_agents import managed_agent_call
from collector.recognise._nodes import span_node
from collector.recognise._tool_invoker import tool_invoker_executions
from collector.recognise.conventions import recognise_execution
from collector.recognise.outcomes import extract_outcomes
from collector.recognise.requests import extract_requests


@compact_pickle
@dataclass(slots=True)
class Recognised:
    """One span as recognition hands it on: to the run tracker, or across a decode worker's pipe."""

    node: SpanNode
    # Every tool execution the span records, by `call_index`: one, or none, but for a span that runs
    # several calls (Haystack 2's ToolInvoker).
    executions: tuple[ToolExecution, ...]
    requests: tuple[ToolRequest, ...]
    outcomes: tuple[ToolOutcome, ...] = ()

    @property
    def execution(self) -> ToolExecution | None:
        """The span's first execution (its only one in every convention but a ToolInvoker's)."""
        return self.executions[0] if self.executions else None


def recognise_executions(span: Span) -> tuple[ToolExecution, ...]:
    """Every tool execution a span records, in the order it records them."""
    invoked = tool_invoker_executions(span)
    if invoked is not None:
        return invoked
    execution = recognise_execution(span) or managed_agent_call(span)
    return () if execution is None else (execution,)


def recognise(span: Span) -> Recognised:
    return Recognised(
        span_node(span), recognise_executions(span), tuple(extract_requests(span)), extract_outcomes(span)
    )

"""Everything recognition reads off one span, from the wire or re-read from the `spans` table."""

from __future__ import annotations

from dataclasses import dataclass

from collector.model.domain import Span, SpanNode, ToolExecution, ToolOutcome, ToolRequest, compact_pickle
from collector.recognise._nodes import span_node
from collector.recognise.conventions import recognise_execution
from collector.recognise.outcomes import extract_outcomes
from collector.recognise.requests import extract_requests


@compact_pickle
@dataclass(slots=True)
class Recognised:
    """One span as recognition hands it on: to the run tracker, or across a decode worker's pipe."""

    node: SpanNode
    execution: ToolExecution | None
    requests: tuple[ToolRequest, ...]
    outcomes: tuple[ToolOutcome, ...] = ()


def recognise(span: Span) -> Recognised:
    return Recognised(
        span_node(span), recognise_execution(span), tuple(extract_requests(span)), extract_outcomes(span)
    )

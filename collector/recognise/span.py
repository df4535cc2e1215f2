"""Everything recognition reads off one span, from the wire or re-read from the `spans` table."""

from __future__ import annotations

from collector.model.domain import Span
from collector.recognise._nodes import span_node
from collector.recognise.conventions import recognise_execution
from collector.recognise.requests import extract_requests
from collector.store._tracker import Recognised


def recognise(span: Span) -> Recognised:
    return Recognised(span_node(span), recognise_execution(span), tuple(extract_requests(span)))

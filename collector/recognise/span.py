"""Everything recognition reads off one span, from the wire or re-read from the `spans` table."""

from __future__ import annotations

from collector._conventions import recognise_execution
from collector._model import Span
from collector._nodes import span_node
from collector._requests import extract_requests
from collector._tracker import Recognised


def recognise(span: Span) -> Recognised:
    return Recognised(span_node(span), recognise_execution(span), tuple(extract_requests(span)))

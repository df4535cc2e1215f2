"""Domain spans for tests that drive the writer directly, without OTLP: plain, with what a test changes."""

from __future__ import annotations

import dataclasses
from typing import Any

from collector.model.domain import Resource, Span

START_NS = 1_700_000_000_000_000_000


def domain_span(trace_id: str, span_id: str, parent: str | None = None, **changes: Any) -> Span:
    """A span "op" of 1 ns at START_NS from scope "tests", with `changes` applied (name, attributes…)."""
    span = Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name="op",
        kind=1,
        start_ns=START_NS,
        end_ns=START_NS + 1,
        status_code=0,
        status_message="",
        attributes={},
        events=(),
        links=(),
        resource=Resource({}, "tests", ""),
    )
    return dataclasses.replace(span, **changes) if changes else span

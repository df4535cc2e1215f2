"""What both OTLP decoders return, and the checks on a span that both apply."""

from __future__ import annotations

from dataclasses import dataclass, field

from collector.decode.nesting import DroppedValues
from collector.model.domain import Span


class UndecodableRequest(ValueError):
    """The whole request cannot be read: answered with HTTP 400 / gRPC INVALID_ARGUMENT."""


@dataclass(slots=True)
class DecodedRequest:
    spans: list[Span] = field(default_factory=list)
    rejected: int = 0
    # One line per distinct reason, with a count, for the partial_success error_message.
    problems: dict[str, int] = field(default_factory=dict)
    # Attributes dropped for their depth, their spans kept (collector/decode/nesting.py).
    dropped_values: DroppedValues = field(default_factory=DroppedValues)

    def reject(self, reason: str) -> None:
        self.rejected += 1
        self.problems[reason] = self.problems.get(reason, 0) + 1

    def error_message(self) -> str:
        """The partial_success message: spans rejected, by reason, and attributes dropped (a warning
        alone, when no span was rejected)."""
        parts = [f"{count} span(s): {reason}" for reason, count in self.problems.items()]
        if self.dropped_values.count:
            parts.append(self.dropped_values.message())
        return "; ".join(parts)


ZERO_TRACE_ID = "0" * 32
ZERO_SPAN_ID = "0" * 16


_MAX_TIME_NS = 2**63 - 1


def parent_or_root(parent_span_id: str | None) -> str | None:
    """The parent id as stored: None for a root span.

    All zeros is W3C's invalid span id, which some converters send for "no parent" (the Collector's
    pdata reads it as empty too); kept as a parent, the span would wait for a parent that never comes.
    """
    if not parent_span_id or parent_span_id == ZERO_SPAN_ID:
        return None
    return parent_span_id


def span_problem(
    trace_id: str, span_id: str, parent_span_id: str | None, name: str, start_ns: int, end_ns: int
) -> str | None:
    """Why a span with these (already hex) ids is individually invalid, or None when it is fine."""
    if len(trace_id) != 32 or trace_id == ZERO_TRACE_ID:
        return "trace_id must be 16 bytes and not all zero"
    if len(span_id) != 16 or span_id == ZERO_SPAN_ID:
        return "span_id must be 8 bytes and not all zero"
    if parent_span_id is not None and len(parent_span_id) != 16:
        return "parent_span_id must be empty or 8 bytes"
    if not name:
        return "span name is required"
    if not (0 <= start_ns <= _MAX_TIME_NS and 0 <= end_ns <= _MAX_TIME_NS):
        return "start and end times must be Unix nanoseconds below 2**63"
    return None

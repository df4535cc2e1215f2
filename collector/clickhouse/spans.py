"""Rows of `otel_traces` back into the domain spans the OTLP decoders make, for the very same recognition.

What the Collector's ClickHouse exporter does to a span (opentelemetry-collector-contrib,
exporter/clickhouseexporter: `internal.AttributesToMap`, which writes `pcommon.Value.AsString()` of every
attribute) and how it is read back here:

- string: written as is, read back as is;
- bool: written `true` / `false`, read back as `True` / `False` (recognition's flags, such as
  `tracescore.tool.paused`, are booleans);
- int and double: written as decimal text, kept as text (recognition reads ids and names with
  `str(value)`, which gives the same text either way);
- array and kvlist: written as JSON text (Go's `json.Marshal`), kept as text (recognition reads JSON
  content from text, which is how Python SDKs send it);
- bytes: written as base64 text, kept as text.

Span kinds and status codes are words (`Internal`, `Error`; older exporters wrote `SPAN_KIND_INTERNAL`,
`STATUS_CODE_ERROR`); the exporter keeps no span flags or dropped counts, so those are 0.
"""

from __future__ import annotations

from typing import Any

from collector.model.domain import Resource, Span, SpanEvent, SpanLink

_KINDS = {"unspecified": 0, "internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_STATUS = {"unset": 0, "ok": 1, "error": 2}


def attribute_value(text: str) -> Any:
    """One attribute as the exporter wrote it, read back (the table above)."""
    if text == "true":
        return True
    if text == "false":
        return False
    return text


def attributes(written: dict[str, str] | None) -> dict[str, Any]:
    return {key: attribute_value(value) for key, value in (written or {}).items()}


def _word(text: str, prefix: str) -> str:
    return text.lower().removeprefix(prefix)


def span_kind(text: str) -> int:
    return _KINDS.get(_word(text, "span_kind_"), 0)


def status_code(text: str) -> int:
    return _STATUS.get(_word(text, "status_code_"), 0)


def span_from_row(row: list[Any]) -> Span:
    """One row of `selection.SPAN_COLUMNS`."""
    (
        trace_id,
        span_id,
        parent_span_id,
        trace_state,
        name,
        kind,
        resource_attributes,
        scope_name,
        scope_version,
        span_attributes,
        start_ns,
        duration,
        status,
        status_message,
        event_times,
        event_names,
        event_attributes,
        link_trace_ids,
        link_span_ids,
        _link_states,
        link_attributes,
    ) = row
    start = int(start_ns)
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_span_id or None,
        name=name,
        kind=span_kind(kind),
        start_ns=start,
        end_ns=start + int(duration),
        status_code=status_code(status),
        status_message=status_message,
        attributes=attributes(span_attributes),
        events=tuple(
            SpanEvent(n, int(t), attributes(a))
            for t, n, a in zip(event_times, event_names, event_attributes, strict=True)
        ),
        links=tuple(
            SpanLink(t, s, attributes(a))
            for t, s, a in zip(link_trace_ids, link_span_ids, link_attributes, strict=True)
        ),
        resource=Resource(attributes(resource_attributes), scope_name, scope_version),
        trace_state=trace_state,
    )

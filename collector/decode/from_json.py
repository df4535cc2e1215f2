"""OTLP/JSON → domain spans, by a direct walk of `json.loads` output.

The rules are the OTLP spec's "JSON Protobuf Encoding": lowerCamelCase keys, trace and span ids as
case-insensitive hex (not base64), enums as integers, 64-bit integers as decimal strings (numbers also
accepted), bytes as base64, unknown fields ignored. `google.protobuf.json_format` would apply the
generic proto3 JSON rules instead (base64 ids) and runs an order of magnitude slower.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from collector.decode.decoded import DecodedRequest, UndecodableRequest, parent_or_root, span_problem
from collector.decode.nesting import MAX_VALUE_DEPTH, DroppedValues, ValueTooDeep
from collector.model.domain import Resource, Span, SpanEvent, SpanLink
from collector.model.jsontext import to_json

_HEX = frozenset("0123456789abcdef")

_SPAN_KINDS = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


class _BadSpan(ValueError):
    """One span (or one of its fields) breaks the encoding rules: that span alone is rejected."""


def _hex_id(value: Any, field: str, size: int, *, optional: bool = False) -> str | None:
    if value is None or value == "":
        if optional:
            return None
        raise _BadSpan(f"{field} is required")
    if not isinstance(value, str):
        raise _BadSpan(f"{field} must be a hex string")
    lowered = value.lower()
    if len(lowered) != size * 2 or not set(lowered) <= _HEX:
        raise _BadSpan(
            f"{field} must be {size * 2} hex characters (OTLP/JSON encodes ids as hex, not base64)"
        )
    return lowered


def _uint(value: Any, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        raise _BadSpan(f"{field} must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise _BadSpan(f"{field} must be an integer (64-bit integers are decimal strings in OTLP/JSON)")


def _enum(value: Any, names: dict[str, int], field: str) -> int:
    if isinstance(value, str) and value in names:
        return names[value]  # the spec says integers; names are accepted leniently
    return _uint(value, field)


def _any_value(value: Any, level: int = 1) -> Any:
    if level > MAX_VALUE_DEPTH:
        raise ValueTooDeep
    if not isinstance(value, dict):
        raise _BadSpan("attribute value must be an AnyValue object")
    if "stringValue" in value:
        text = value["stringValue"]
        if not isinstance(text, str):
            raise _BadSpan("stringValue must be a string")
        return text
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            raise _BadSpan("boolValue must be true or false")
        return flag
    if "intValue" in value:
        return _uint(value["intValue"], "intValue")
    if "doubleValue" in value:
        number = value["doubleValue"]
        if isinstance(number, bool) or not isinstance(number, int | float | str):
            raise _BadSpan("doubleValue must be a number")
        try:
            return float(number)  # "NaN" and "Infinity" arrive as strings
        except ValueError as exc:
            raise _BadSpan("doubleValue must be a number") from exc
    if "arrayValue" in value:
        return [_any_value(item, level + 1) for item in _list(_dict(value["arrayValue"]).get("values"))]
    if "kvlistValue" in value:
        return _attributes(_dict(value["kvlistValue"]).get("values"), level=level + 1)
    if "bytesValue" in value:
        try:
            return base64.b64decode(value["bytesValue"], validate=True).hex()
        except (binascii.Error, TypeError) as exc:
            raise _BadSpan("bytesValue must be base64") from exc
    return None  # empty AnyValue, or a field we do not know: unknown fields are ignored


def _dict(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _BadSpan("expected a JSON object")
    return value


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _BadSpan("expected a JSON array")
    return value


def _attributes(pairs: Any, dropped: DroppedValues | None = None, level: int = 1) -> dict[str, Any]:
    """Key-values as a dict. At the top (`dropped` given) one whose value nests too deeply is left out
    and counted; inside a value (`level` > 1) the depth is the whole value's, and raises."""
    result: dict[str, Any] = {}
    for item in _list(pairs):
        pair = _dict(item)
        key = pair.get("key")
        if not isinstance(key, str):
            raise _BadSpan("attribute key must be a string")
        try:
            result[key] = _any_value(pair.get("value", {}), level)
        except ValueTooDeep:
            if dropped is None:
                raise
            dropped.add(key)
    return result


def _text(value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _BadSpan(f"{field} must be a string")
    return value


def _span(raw: Any, resource: Resource, dropped: DroppedValues) -> Span:
    raw = _dict(raw)
    trace_id = _hex_id(raw.get("traceId"), "traceId", 16)
    span_id = _hex_id(raw.get("spanId"), "spanId", 8)
    assert trace_id is not None and span_id is not None
    status = _dict(raw.get("status"))
    events = tuple(
        SpanEvent(
            _text(_dict(e).get("name"), "event name"),
            _uint(_dict(e).get("timeUnixNano"), "timeUnixNano"),
            _attributes(_dict(e).get("attributes"), dropped),
        )
        for e in _list(raw.get("events"))
    )
    links, bad_links = [], 0
    for raw_link in _list(raw.get("links")):
        link = _dict(raw_link)
        try:
            link_trace = _hex_id(link.get("traceId"), "link traceId", 16)
            link_span = _hex_id(link.get("spanId"), "link spanId", 8)
        except _BadSpan:
            bad_links += 1  # a malformed link does not make the span bad: it is dropped and counted
            continue
        assert link_trace is not None and link_span is not None
        links.append(SpanLink(link_trace, link_span, _attributes(link.get("attributes"), dropped)))
    before = dropped.count
    attributes = _attributes(raw.get("attributes"), dropped)
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_or_root(_hex_id(raw.get("parentSpanId"), "parentSpanId", 8, optional=True)),
        name=_text(raw.get("name"), "name"),
        kind=_enum(raw.get("kind"), _SPAN_KINDS, "kind"),
        start_ns=_uint(raw.get("startTimeUnixNano"), "startTimeUnixNano"),
        end_ns=_uint(raw.get("endTimeUnixNano"), "endTimeUnixNano"),
        status_code=_enum(status.get("code"), _STATUS_CODES, "status.code"),
        status_message=_text(status.get("message"), "status.message"),
        attributes=attributes,
        events=events,
        links=tuple(links),
        resource=resource,
        trace_state=_text(raw.get("traceState"), "traceState"),
        flags=_uint(raw.get("flags"), "flags"),
        dropped_attributes_count=_uint(raw.get("droppedAttributesCount"), "droppedAttributesCount")
        + dropped.count
        - before,
        dropped_events_count=_uint(raw.get("droppedEventsCount"), "droppedEventsCount"),
        dropped_links_count=_uint(raw.get("droppedLinksCount"), "droppedLinksCount") + bad_links,
    )


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def decode_json(body: bytes) -> DecodedRequest:
    try:
        document = json.loads(body)
        if b"\\ud" in body.lower():
            # A \ud800-style escape can decode to a lone surrogate, which no UTF-8 column can hold.
            document = _without_surrogates(document)
    except RecursionError:
        # Python's JSON parser stops near 1,000 levels: nothing of such a body can be read.
        raise UndecodableRequest(
            "body is not valid JSON here: nested deeper than the JSON parser allows (about 1,000 "
            f"levels; attribute values deeper than {MAX_VALUE_DEPTH} are dropped, not stored)"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UndecodableRequest(f"body is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise UndecodableRequest("body must be a JSON object (an ExportTraceServiceRequest)")
    resource_spans = document.get("resourceSpans", [])
    if not isinstance(resource_spans, list):
        raise UndecodableRequest("resourceSpans must be a JSON array")
    decoded = DecodedRequest()
    for raw_rs in resource_spans:
        try:
            rs = _dict(raw_rs)
            resource_attrs = _attributes(_dict(rs.get("resource")).get("attributes"), decoded.dropped_values)
            scope_list = _list(rs.get("scopeSpans"))
        except (_BadSpan, RecursionError) as exc:
            raise UndecodableRequest(f"resourceSpans entry is malformed: {exc}") from exc
        for raw_ss in scope_list:
            try:
                ss = _dict(raw_ss)
                scope = _dict(ss.get("scope"))
                resource = Resource(
                    resource_attrs,
                    _text(scope.get("name"), "scope.name"),
                    _text(scope.get("version"), ""),
                    to_json(resource_attrs),
                )
                raw_spans = _list(ss.get("spans"))
            except _BadSpan as exc:
                raise UndecodableRequest(f"scopeSpans entry is malformed: {exc}") from exc
            for raw in raw_spans:
                try:
                    span = _span(raw, resource, decoded.dropped_values)
                except _BadSpan as exc:
                    decoded.reject(str(exc))
                    continue
                except RecursionError:
                    decoded.reject("attribute values nested too deeply")
                    continue
                problem = span_problem(
                    span.trace_id, span.span_id, span.parent_span_id, span.name, span.start_ns, span.end_ns
                )
                if problem:
                    decoded.reject(problem)
                else:
                    decoded.spans.append(span)
    return decoded

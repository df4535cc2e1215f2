"""OTLP protobuf (ExportTraceServiceRequest bytes) → domain spans. Knows no sockets and no storage."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from collector.decode.decoded import DecodedRequest, UndecodableRequest, parent_or_root, span_problem
from collector.decode.nesting import MAX_VALUE_DEPTH, DroppedValues, ValueTooDeep, strip_deep_values
from collector.model.domain import Resource, Span, SpanEvent, SpanLink
from collector.model.jsontext import to_json


def any_value(value: AnyValue, level: int = 1) -> Any:
    """An attribute value as Python; raises ValueTooDeep past MAX_VALUE_DEPTH levels."""
    if level > MAX_VALUE_DEPTH:
        raise ValueTooDeep
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind == "array_value":
        return [any_value(item, level + 1) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value, level + 1) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    # Unset, or the profiles-only string_value_strindex: treated as absent (common.proto says so).
    return None


def attributes(pairs: Any, dropped: DroppedValues) -> dict[str, Any]:
    """Key-values as a dict; one whose value nests too deeply is left out and counted in `dropped`."""
    result: dict[str, Any] = {}
    for pair in pairs:
        kv: KeyValue = pair
        value = kv.value
        # Most attribute values are strings: read them without a call per attribute.
        if value.WhichOneof("value") == "string_value":
            result[kv.key] = value.string_value
            continue
        try:
            result[kv.key] = any_value(value)
        except ValueTooDeep:
            dropped.add(kv.key)
    return result


def parse_request(body: bytes, dropped: DroppedValues) -> ExportTraceServiceRequest:
    """The request parsed (raises UndecodableRequest). One that fails only for attribute values nested
    past protobuf's limit is parsed without them, each counted in `dropped` (collector/decode/nesting.py)."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
        return request
    except (DecodeError, RecursionError) as exc:
        error = f"body is not a valid OTLP ExportTraceServiceRequest: {exc}"
    salvaged = strip_deep_values(body)
    if salvaged is not None:
        stripped, found = salvaged
        try:
            request.ParseFromString(stripped)
        except (DecodeError, RecursionError):
            pass
        else:
            dropped.merge(found)
            return request
    # Raised here, outside the except clause: the parse error's traceback does not keep this frame.
    raise UndecodableRequest(error)


def decode_protobuf(body: bytes) -> DecodedRequest:
    decoded = DecodedRequest()
    dropped = decoded.dropped_values
    request = parse_request(body, dropped)
    for resource_spans in request.resource_spans:
        resource_attrs = attributes(resource_spans.resource.attributes, dropped)
        resource_json = to_json(resource_attrs)
        for scope_spans in resource_spans.scope_spans:
            resource = Resource(
                resource_attrs, scope_spans.scope.name, scope_spans.scope.version, resource_json
            )
            spans = decoded.spans
            for pb in scope_spans.spans:
                trace_id = pb.trace_id.hex()
                span_id = pb.span_id.hex()
                parent = parent_or_root(pb.parent_span_id.hex())
                name = pb.name
                start, end = pb.start_time_unix_nano, pb.end_time_unix_nano
                problem = span_problem(trace_id, span_id, parent, name, start, end)
                if problem:
                    decoded.reject(problem)
                    continue
                # Most spans have no events or links: skip building empty tuples through generators.
                pb_links = pb.links
                links: tuple[SpanLink, ...] = ()
                if pb_links:
                    # A malformed link does not make the span bad: it is dropped and counted as dropped.
                    links = tuple(
                        SpanLink(
                            link.trace_id.hex(), link.span_id.hex(), attributes(link.attributes, dropped)
                        )
                        for link in pb_links
                        if len(link.trace_id) == 16 and len(link.span_id) == 8
                    )
                pb_events = pb.events
                events = (
                    tuple(
                        SpanEvent(e.name, e.time_unix_nano, attributes(e.attributes, dropped))
                        for e in pb_events
                    )
                    if pb_events
                    else ()
                )
                status = pb.status
                before = dropped.count
                span_attributes = attributes(pb.attributes, dropped)
                spans.append(
                    Span(
                        trace_id,
                        span_id,
                        parent,
                        name,
                        pb.kind,
                        start,
                        end,
                        status.code,
                        status.message,
                        span_attributes,
                        events,
                        links,
                        resource,
                        pb.trace_state,
                        pb.flags,
                        pb.dropped_attributes_count + dropped.count - before,
                        pb.dropped_events_count,
                        pb.dropped_links_count + len(pb_links) - len(links),
                    )
                )
    return decoded

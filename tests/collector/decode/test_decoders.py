"""The two OTLP decoders agree on what makes a span bad and what is merely dropped."""

from __future__ import annotations

import json

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector import decode_json, decode_protobuf

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
LINKED = "5b8efff798038103d269b633813fc60d"


def _json_request(links: list[dict[str, str]]) -> bytes:
    span = {"traceId": TRACE, "spanId": SPAN, "name": "s", "links": links, "droppedLinksCount": 1}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


def _pb_request(link_ids: list[tuple[bytes, bytes]]) -> bytes:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name, span.dropped_links_count = (
        bytes.fromhex(TRACE),
        bytes.fromhex(SPAN),
        "s",
        1,
    )
    for trace_id, span_id in link_ids:
        link = span.links.add()
        link.trace_id, link.span_id = trace_id, span_id
    return bytes(request.SerializeToString())


def test_a_malformed_link_is_dropped_and_counted_not_the_span() -> None:
    from_json = decode_json(
        _json_request([{"traceId": LINKED, "spanId": SPAN}, {"traceId": "xyz", "spanId": SPAN}])
    )
    from_pb = decode_protobuf(
        _pb_request([(bytes.fromhex(LINKED), bytes.fromhex(SPAN)), (b"\x01" * 3, b"\x02" * 8)])
    )
    for decoded in (from_json, from_pb):
        assert decoded.rejected == 0
        (span,) = decoded.spans
        assert [(link.trace_id, link.span_id) for link in span.links] == [(LINKED, SPAN)]
        assert span.dropped_links_count == 2  # the sender's one plus the malformed one


def test_an_all_zero_parent_means_a_root_in_both_encodings() -> None:
    span = {"traceId": TRACE, "spanId": SPAN, "parentSpanId": "0" * 16, "name": "s"}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    request = ExportTraceServiceRequest()
    pb = request.resource_spans.add().scope_spans.add().spans.add()
    pb.trace_id, pb.span_id, pb.parent_span_id, pb.name = (
        bytes.fromhex(TRACE),
        bytes.fromhex(SPAN),
        bytes(8),
        "s",
    )
    for decoded in (decode_json(body), decode_protobuf(bytes(request.SerializeToString()))):
        assert decoded.spans[0].parent_span_id is None

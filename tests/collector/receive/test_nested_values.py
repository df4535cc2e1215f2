"""An attribute value nested too deeply loses that attribute only (issue 26, part 3).

Through a real `tracescore serve`, over OTLP/HTTP (protobuf and JSON) and OTLP/gRPC: a span carrying an
attribute nested 90 levels deep (past python protobuf's parse limit of 100 message levels, which
failed the whole request before, good spans included) and an event attribute nested as deep, beside a
value nested exactly 32 levels in the worst place (a key-value list in an event's attribute: 100
message levels). The too-deep attributes are dropped and counted (the span's
`dropped_attributes_count`, and the answer's `partial_success` as a warning: no span rejected); every
span, every other attribute and the 32-level value are stored. JSON nested past Python's own parser
cannot be read at all: it gets one precise 400.
"""

from __future__ import annotations

import http.client
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from collector.decode.nesting import MAX_VALUE_DEPTH
from tests._nested import field, fixed64, json_value, pb_attribute, pb_value, varint
from tests._raw import EXPORT
from tests._server import ServeProcess

DEEP = 90


# ---- protobuf, written field by field: python protobuf cannot even build such a message -------------


def _pb_body(trace_id: bytes, deep_span: bytes, good_span: bytes) -> bytes:
    deep = (
        field(1, trace_id)
        + field(2, deep_span)
        + field(5, b"deep")
        + fixed64(7, 1_700_000_000_000_000_000)
        + fixed64(8, 1_700_000_000_100_000_000)
        + field(9, pb_attribute("ok", field(1, b"kept")))
        + field(9, pb_attribute("too_deep", pb_value(DEEP, "array")))
        + field(
            11,
            varint(1 << 3 | 1)
            + (1_700_000_000_050_000_000).to_bytes(8, "little")
            + field(2, b"event")
            + field(3, pb_attribute("event_too_deep", pb_value(DEEP, "kvlist")))
            + field(3, pb_attribute("edge", pb_value(MAX_VALUE_DEPTH, "kvlist"))),
        )
    )
    good = (
        field(1, trace_id)
        + field(2, good_span)
        + field(5, b"good")
        + fixed64(7, 1_700_000_000_000_000_000)
        + fixed64(8, 1_700_000_000_100_000_000)
        + field(9, pb_attribute("ok", field(1, b"kept")))
    )
    return field(1, field(2, field(2, deep) + field(2, good)))


# ---- the same in OTLP/JSON ----------------------------------------------------------------------------


def _json_body(trace_id: bytes, deep_span: bytes, good_span: bytes) -> bytes:
    def span(span_id: bytes, name: str, extra_attributes: str, events: str) -> str:
        return (
            f'{{"traceId":"{trace_id.hex()}","spanId":"{span_id.hex()}","name":"{name}",'
            '"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000100000000",'
            f'"attributes":[{{"key":"ok","value":{{"stringValue":"kept"}}}}{extra_attributes}],'
            f'"events":[{events}]}}'
        )

    deep = span(
        deep_span,
        "deep",
        f',{{"key":"too_deep","value":{json_value(DEEP, "array")}}}',
        '{"name":"event","timeUnixNano":"1700000000050000000","attributes":['
        f'{{"key":"event_too_deep","value":{json_value(DEEP, "kvlist")}}},'
        f'{{"key":"edge","value":{json_value(MAX_VALUE_DEPTH, "kvlist")}}}]}}',
    )
    good = span(good_span, "good", "", "")
    return f'{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{deep},{good}]}}]}}]}}'.encode()


# ---- the server ----------------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(tmp_path / "nested.duckdb").start()
    yield process
    process.kill()


def _post(server: ServeProcess, body: bytes, content_type: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        connection.request("POST", "/v1/traces", body=body, headers={"Content-Type": content_type})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _grpc(server: ServeProcess, body: bytes) -> bytes:
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        export = channel.unary_unary(EXPORT, request_serializer=bytes, response_deserializer=bytes)
        return export(body, timeout=30)  # type: ignore[no-any-return]


def _warning(rejected: int, message: str) -> None:
    assert rejected == 0  # no span rejected: a warning, as OTLP's partial_success allows
    assert "2 attribute(s) dropped" in message and f"deeper than {MAX_VALUE_DEPTH} levels" in message
    assert "'too_deep'" in message and "'event_too_deep'" in message


def test_a_deeply_nested_attribute_is_dropped_and_the_rest_of_the_request_kept(server: ServeProcess) -> None:
    sent: dict[str, tuple[bytes, bytes, bytes]] = {}
    for way in ("http/protobuf", "http/json", "grpc"):
        ids = (os.urandom(16), os.urandom(8), os.urandom(8))
        sent[way] = ids
        if way == "http/json":
            status, reply = _post(server, _json_body(*ids), "application/json")
            assert status == 200, reply
            partial = json.loads(reply)["partialSuccess"]
            _warning(int(partial["rejectedSpans"]), partial["errorMessage"])
            continue
        body = _pb_body(*ids)
        if way == "grpc":
            response = ExportTraceServiceResponse.FromString(_grpc(server, body))
        else:
            status, reply = _post(server, body, "application/x-protobuf")
            assert status == 200, reply
            response = ExportTraceServiceResponse.FromString(reply)
        assert response.HasField("partial_success")
        _warning(response.partial_success.rejected_spans, response.partial_success.error_message)
    # JSON nested past Python's parser (near 1,000 levels): nothing of it can be read; one clear line.
    body = _json_body(os.urandom(16), os.urandom(8), os.urandom(8)).replace(
        b'"stringValue":"leaf"', b'"stringValue":' + b"[" * 2000 + b"]" * 2000, 1
    )
    status, reply = _post(server, body, "application/json")
    assert status == 400
    assert "nested deeper than the JSON parser allows" in json.loads(reply)["message"]
    assert server.stop() == 0
    for way, (trace_id, deep_span, good_span) in sent.items():
        rows = server.query(
            "SELECT span_id, name, attributes, events, dropped_attributes_count FROM spans "
            "WHERE trace_id = ? ORDER BY name",
            [trace_id.hex()],
        )
        assert [row[:2] for row in rows] == [(deep_span.hex(), "deep"), (good_span.hex(), "good")], way
        (*_, deep_attributes, deep_events, deep_dropped), (*_, good_attributes, _, good_dropped) = rows
        assert json.loads(deep_attributes) == {"ok": "kept"}, way
        assert deep_dropped == 1 and good_dropped == 0, way
        (event,) = json.loads(deep_events)
        assert set(event["attributes"]) == {"edge"}, way
        assert _depth(event["attributes"]["edge"]) == MAX_VALUE_DEPTH, way
        assert json.loads(good_attributes) == {"ok": "kept"}, way


def _depth(value: Any) -> int:
    """AnyValue levels of a stored value (a scalar is 1; {"k": x} adds one)."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 1

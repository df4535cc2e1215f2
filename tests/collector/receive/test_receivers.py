"""OTLP receiver conformance and bad input, through real sockets against a real `tracescore serve`.

Every refusal is checked three ways: the exact answer the OTLP spec documents, that the server still
answers a good request afterwards, and that good data (sent beside or after the bad) is stored.
Rules: ../shared/reference/otlp-receiver-checklist.md.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import http.client
import json
import os
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.util.types import AttributeValue

from collector.decode.prepare import prepare_spans
from collector.model.domain import Resource
from collector.receive.ingest import Ingest
from collector.receive.otlp_grpc import start_grpc
from collector.receive.otlp_http import build_app, start_http
from collector.store.database import open_writer
from collector.store.writer import WriteJob, Writer, WriterSettings
from tests import _otel
from tests._server import ServeProcess
from tests._spans import domain_span

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MIB = 1024 * 1024
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
START_NS = 1_700_000_000_000_000_000


# ---- servers -----------------------------------------------------------------------------------


def _serve(path: Path, *extra_args: str) -> Iterator[ServeProcess]:
    process = ServeProcess(db=path / "traces.duckdb", extra_args=extra_args).start()
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One server with default limits for the tests that need nothing special."""
    yield from _serve(tmp_path_factory.mktemp("shared"))


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A server that accepts at most 1 MiB per request (after decompression)."""
    yield from _serve(tmp_path_factory.mktemp("small"), "--max-request-mib", "1")


def query_stored(server: ServeProcess, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Rows as committed: DuckDB lets one process open the file, so stop (cleanly), read, restart."""
    assert server.stop() == 0, server.log()
    try:
        return server.query(sql, params)
    finally:
        server.start()


def stored_spans(server: ServeProcess, *trace_ids: str) -> set[tuple[str, str, str]]:
    """(trace_id, span_id, name) of every stored span of these traces."""
    rows = query_stored(
        server,
        "SELECT trace_id, span_id, name FROM spans WHERE trace_id IN (SELECT unnest(?::VARCHAR[]))",
        [list(trace_ids)],
    )
    return {(t, s, n) for t, s, n in rows}


# ---- building requests ---------------------------------------------------------------------------


def new_trace_id() -> bytes:
    return os.urandom(16)


def new_span_id() -> bytes:
    return os.urandom(8)


def string_attr(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def pb_span(
    trace_id: bytes,
    span_id: bytes,
    name: str = "op",
    parent: bytes = b"",
    attributes: dict[str, str] | None = None,
) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=START_NS,
        end_time_unix_nano=START_NS + 5_000_000,
        attributes=[string_attr(k, v) for k, v in (attributes or {}).items()],
    )


def pb_request(*spans: Span, service: str = "receiver-test") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans: ResourceSpans = request.resource_spans.add()
    resource_spans.resource.attributes.append(string_attr("service.name", service))
    scope_spans: ScopeSpans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "tests.receivers"
    scope_spans.spans.extend(spans)
    return request


def one_span_request() -> tuple[bytes, str, str]:
    """A serialized one-span request and the (trace_id, span_id) hex it carries."""
    trace_id, span_id = new_trace_id(), new_span_id()
    body = pb_request(pb_span(trace_id, span_id, "probe")).SerializeToString()
    return body, trace_id.hex(), span_id.hex()


def json_span(trace_id: str, span_id: str, name: str = "op") -> dict[str, Any]:
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(START_NS),
        "endTimeUnixNano": str(START_NS + 1_000_000),
    }


def json_request(*spans: dict[str, Any]) -> bytes:
    document = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-test"}}]},
                "scopeSpans": [{"scope": {"name": "tests.receivers.json"}, "spans": list(spans)}],
            }
        ]
    }
    return json.dumps(document).encode()


# ---- talking to the server -----------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def http_request(
    port: int,
    body: bytes | Iterator[bytes] | None,
    content_type: str = PROTOBUF,
    *,
    method: str = "POST",
    path: str = "/v1/traces",
    headers: dict[str, str] | None = None,
) -> Reply:
    """One request on a fresh connection; an iterator body is sent chunked (no Content-Length)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            method,
            path,
            body=body,
            headers={"Content-Type": content_type, **(headers or {})},
            encode_chunked=isinstance(body, Iterator),
        )
        response = connection.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


def http_call(
    server: ServeProcess,
    body: bytes | Iterator[bytes] | None,
    content_type: str = PROTOBUF,
    *,
    method: str = "POST",
    path: str = "/v1/traces",
    headers: dict[str, str] | None = None,
) -> Reply:
    return http_request(server.http_port, body, content_type, method=method, path=path, headers=headers)


def post_ok_protobuf(server: ServeProcess, body: bytes, **headers: str) -> ExportTraceServiceResponse:
    reply = http_call(server, body, PROTOBUF, headers=headers)
    assert reply.status == 200, reply
    assert reply.headers["content-type"] == PROTOBUF
    return ExportTraceServiceResponse.FromString(reply.body)


def http_status_body(reply: Reply) -> status_pb2.Status:
    assert reply.headers["content-type"] == PROTOBUF
    return status_pb2.Status.FromString(reply.body)


def http_still_serving(server: ServeProcess) -> tuple[str, str]:
    """A good request is answered with full success; returns the (trace_id, span_id) it stored."""
    body, trace_id, span_id = one_span_request()
    assert not post_ok_protobuf(server, body).HasField("partial_success")
    return trace_id, span_id


def _identity(data: bytes) -> bytes:
    return data


def grpc_call(endpoint: str, body: bytes, compression: grpc.Compression | None = None) -> bytes:
    """TraceService/Export with raw bytes, so malformed requests can be sent."""
    with grpc.insecure_channel(endpoint) as channel:
        export = channel.unary_unary(EXPORT, request_serializer=_identity, response_deserializer=_identity)
        response: bytes = export(body, timeout=30, compression=compression)
        return response


def grpc_refusal(endpoint: str, body: bytes, compression: grpc.Compression | None = None) -> grpc.RpcError:
    try:
        grpc_call(endpoint, body, compression)
    except grpc.RpcError as error:
        return error
    raise AssertionError("the export was accepted")


def grpc_export(server: ServeProcess, body: bytes, compression: grpc.Compression | None = None) -> bytes:
    return grpc_call(server.grpc_endpoint, body, compression)


def grpc_still_serving(server: ServeProcess) -> tuple[str, str]:
    body, trace_id, span_id = one_span_request()
    assert grpc_export(server, body) == b""
    return trace_id, span_id


def probe_stored(server: ServeProcess, *probes: tuple[str, str]) -> None:
    trace_ids = [trace_id for trace_id, _ in probes]
    assert stored_spans(server, *trace_ids) == {(t, s, "probe") for t, s in probes}


# ---- HTTP: success ------------------------------------------------------------------------------


def test_http_protobuf_full_success(shared: ServeProcess) -> None:
    trace_id, root, child = new_trace_id(), new_span_id(), new_span_id()
    request = pb_request(pb_span(trace_id, root, "root"), pb_span(trace_id, child, "child", parent=root))

    response = post_ok_protobuf(shared, request.SerializeToString())

    assert not response.HasField("partial_success")
    rows = query_stored(
        shared,
        "SELECT span_id, parent_span_id, name, service_name, scope_name FROM spans WHERE trace_id = ? "
        "ORDER BY name DESC",
        [trace_id.hex()],
    )
    assert rows == [
        (root.hex(), None, "root", "receiver-test", "tests.receivers"),
        (child.hex(), root.hex(), "child", "receiver-test", "tests.receivers"),
    ]


def test_http_json_follows_the_otlp_json_rules(shared: ServeProcess) -> None:
    trace_id, span_id, parent_id = new_trace_id().hex(), new_span_id().hex(), new_span_id().hex()
    false = {"boolValue": False}
    span = {
        "traceId": trace_id.upper(),  # hex ids are case-insensitive
        "spanId": span_id.upper(),
        "parentSpanId": parent_id.upper(),
        "name": "json span",
        "kind": 3,  # integer enums
        "startTimeUnixNano": "1700000000123456789",  # int64 as decimal strings...
        "endTimeUnixNano": 1700000000223456789,  # ...or numbers
        "traceState": "vendor=1",
        "flags": 1,
        "attributes": [
            {"key": "s", "value": {"stringValue": "text"}},
            {"key": "i", "value": {"intValue": "9007199254740993"}},
            {"key": "b", "value": {"boolValue": True}},
            {"key": "d", "value": {"doubleValue": 1.5}},
            {"key": "a", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "x"}]}}},
            {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "k", "value": false}]}}},
            {"key": "bytes", "value": {"bytesValue": base64.b64encode(b"\x01\xff").decode()}},
        ],
        "events": [
            {
                "timeUnixNano": "1700000000200000000",
                "name": "exception",
                "attributes": [{"key": "exception.type", "value": {"stringValue": "ValueError"}}],
            }
        ],
        "status": {"code": 2, "message": "boom"},
        "someFutureField": {"nested": [1, 2, 3]},  # unknown fields MUST be ignored
    }
    document = json.loads(json_request(span))
    document["unknownTopLevel"] = "ignored"
    document["resourceSpans"][0]["scopeSpans"][0]["scope"]["version"] = "1.2.3"

    # The media type's parameters are ignored; the answer's Content-Type is the request's media type.
    reply = http_call(shared, json.dumps(document).encode(), f"{JSON}; charset=utf-8")

    assert (reply.status, reply.headers["content-type"], json.loads(reply.body)) == (200, JSON, {})
    (row,) = query_stored(
        shared,
        "SELECT trace_id, span_id, parent_span_id, name, kind, epoch_ns(start_time), epoch_ns(end_time), "
        "duration_ms, status_code, status_message, service_name, scope_name, scope_version, trace_state, "
        "flags, attributes, events, links FROM spans WHERE trace_id = ?",
        [trace_id],
    )
    assert row[:15] == (
        trace_id,
        span_id,
        parent_id,
        "json span",
        3,
        1700000000123456789,
        1700000000223456789,
        100.0,
        2,
        "boom",
        "json-test",
        "tests.receivers.json",
        "1.2.3",
        "vendor=1",
        1,
    )
    assert json.loads(row[15]) == {
        "s": "text",
        "i": 9007199254740993,
        "b": True,
        "d": 1.5,
        "a": [1, "x"],
        "kv": {"k": False},
        "bytes": "01ff",
    }
    assert json.loads(row[16]) == [
        {
            "name": "exception",
            "time_unix_nano": 1700000000200000000,
            "attributes": {"exception.type": "ValueError"},
        }
    ]
    assert json.loads(row[17]) == []


def test_http_gzip_body_is_decompressed(shared: ServeProcess) -> None:
    trace_id, pb_id, json_id = new_trace_id(), new_span_id(), new_span_id()
    bodies = {
        PROTOBUF: pb_request(pb_span(trace_id, pb_id, "gzipped protobuf")).SerializeToString(),
        JSON: json_request(json_span(trace_id.hex(), json_id.hex(), "gzipped json")),
    }
    for content_type, body in bodies.items():
        reply = http_call(shared, gzip.compress(body), content_type, headers={"Content-Encoding": "gzip"})

        assert (reply.status, reply.headers["content-type"]) == (200, content_type)
    assert stored_spans(shared, trace_id.hex()) == {
        (trace_id.hex(), pb_id.hex(), "gzipped protobuf"),
        (trace_id.hex(), json_id.hex(), "gzipped json"),
    }


# ---- HTTP: undecodable and refused requests ---------------------------------------------------------


def test_http_undecodable_protobuf_is_400_with_status(shared: ServeProcess) -> None:
    body, trace_id, _ = one_span_request()
    cases: dict[str, tuple[bytes, dict[str, str]]] = {
        "garbage": (b"this is not protobuf \xff\xfe", {}),
        "truncated": (body[: len(body) // 2], {}),
        "corrupt gzip": (gzip.compress(body)[:-12], {"Content-Encoding": "gzip"}),
    }
    for case, (bad_body, headers) in cases.items():
        reply = http_call(shared, bad_body, PROTOBUF, headers=headers)

        assert reply.status == 400, case
        status = http_status_body(reply)
        assert status.code == code_pb2.INVALID_ARGUMENT, case
        assert status.message, case
    probe = http_still_serving(shared)
    assert stored_spans(shared, trace_id, probe[0]) == {(*probe, "probe")}


UNDECODABLE_JSON = [
    b'{"resourceSpans": [',  # cut short
    b"\xff\xfe not utf-8",
    b"[]",  # not an ExportTraceServiceRequest object
    b'{"resourceSpans": {}}',
    b'{"resourceSpans": [{"scopeSpans": 7}]}',
    b"[" * 100_000 + b"]" * 100_000,  # nesting deeper than any decoder's stack
]


def test_http_invalid_json_is_400_with_json_status(shared: ServeProcess) -> None:
    for body in UNDECODABLE_JSON:
        reply = http_call(shared, body, JSON)

        assert (reply.status, reply.headers["content-type"]) == (400, JSON), body[:40]
        document = json.loads(reply.body)
        assert set(document) == {"code", "message"}
        assert document["code"] == 3
        assert isinstance(document["message"], str) and document["message"]
    probe_stored(shared, http_still_serving(shared))


def test_http_unsupported_media_is_415(shared: ServeProcess) -> None:
    body, trace_id, _ = one_span_request()
    for content_type in ("text/plain", "application/octet-stream"):
        reply = http_call(shared, body, content_type)

        assert (reply.status, reply.headers["content-type"]) == (415, JSON), content_type
        assert json.loads(reply.body)["message"]

    reply = http_call(shared, body, PROTOBUF, headers={"Content-Encoding": "br"})

    assert reply.status == 415
    assert http_status_body(reply).message
    probe = http_still_serving(shared)
    assert stored_spans(shared, trace_id, probe[0]) == {(*probe, "probe")}


def test_http_get_is_405_and_other_signals_are_404(shared: ServeProcess) -> None:
    assert http_call(shared, None, method="GET").status == 405
    body, _, _ = one_span_request()
    assert http_call(shared, body, path="/v1/metrics").status == 404
    assert http_call(shared, body, path="/v1/logs").status == 404
    probe_stored(shared, http_still_serving(shared))


def test_http_empty_requests_are_full_success(shared: ServeProcess) -> None:
    assert not post_ok_protobuf(shared, b"").HasField("partial_success")
    reply = http_call(shared, b"{}", JSON)
    assert (reply.status, reply.headers["content-type"], json.loads(reply.body)) == (200, JSON, {})


def test_concurrent_exports_are_all_stored(shared: ServeProcess) -> None:
    trace_id = new_trace_id()
    bodies = [
        pb_request(*(pb_span(trace_id, new_span_id(), f"c{n}-{i}") for i in range(10))).SerializeToString()
        for n in range(24)
    ]

    def send(indexed: tuple[int, bytes]) -> bool:
        n, body = indexed
        if n % 2:
            return grpc_export(shared, body) == b""
        return not post_ok_protobuf(shared, body).HasField("partial_success")

    with ThreadPoolExecutor(max_workers=12) as pool:
        assert all(pool.map(send, enumerate(bodies)))
    assert len(stored_spans(shared, trace_id.hex())) == 240


# ---- HTTP: size limits (1 MiB server) ---------------------------------------------------------------


def big_request(size: int) -> tuple[bytes, str]:
    """A valid request of at least `size` bytes, and its trace id."""
    trace_id = new_trace_id()
    span = pb_span(trace_id, new_span_id(), "big", attributes={"padding": "x" * size})
    return pb_request(span).SerializeToString(), trace_id.hex()


def peak_rss_bytes(server: ServeProcess) -> int:
    """The server's peak resident memory so far (Linux VmHWM): a freed inflation still shows in it."""
    assert server.process is not None
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_http_oversize_body_is_413(small: ServeProcess) -> None:
    body, trace_id = big_request(2 * MIB)

    chunks = (body[i : i + 256 * 1024] for i in range(0, len(body), 256 * 1024))
    # With a Content-Length the size is known up front; chunked, the limit must hold while reading.
    for reply in (http_call(small, body, PROTOBUF), http_call(small, chunks, PROTOBUF)):
        assert reply.status == 413
        assert http_status_body(reply).message
    probe = http_still_serving(small)
    assert stored_spans(small, trace_id, probe[0]) == {(*probe, "probe")}


def test_http_keep_alive_connection_survives_refusals(small: ServeProcess) -> None:
    """Exporters reuse one connection: a refused request (body unread or half read) must not break it."""
    oversize, _ = big_request(2 * MIB)
    good, trace_id, span_id = one_span_request()
    connection = http.client.HTTPConnection("127.0.0.1", small.http_port, timeout=30)
    requests: list[tuple[bytes, str, dict[str, str], int]] = [
        (oversize, PROTOBUF, {}, 413),
        (good, "text/plain", {}, 415),
        (good, PROTOBUF, {"Content-Encoding": "br"}, 415),
        (b"garbage", PROTOBUF, {}, 400),
        (good, PROTOBUF, {}, 200),
    ]
    try:
        for body, content_type, extra, expected in requests:
            headers = {"Content-Type": content_type, **extra}
            connection.request("POST", "/v1/traces/", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            assert response.status == expected
    finally:
        connection.close()
    assert stored_spans(small, trace_id) == {(trace_id, span_id, "probe")}


def test_http_gzip_bomb_is_413_without_inflating_it(small: ServeProcess) -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    bomb = b"".join(compressor.compress(zeros) for _ in range(50)) + compressor.flush()
    assert len(bomb) < 100 * 1024
    peak_before = peak_rss_bytes(small)

    reply = http_call(small, bomb, PROTOBUF, headers={"Content-Encoding": "gzip"})

    assert reply.status == 413
    assert http_status_body(reply).message
    assert peak_rss_bytes(small) - peak_before < 20 * MIB
    probe_stored(small, http_still_serving(small))


def test_http_body_just_under_the_limit_is_accepted(small: ServeProcess) -> None:
    body, trace_id = big_request(MIB - 4096)
    assert len(body) <= MIB
    response = post_ok_protobuf(small, gzip.compress(body), **{"Content-Encoding": "gzip"})
    assert not response.HasField("partial_success")
    assert {name for _, _, name in stored_spans(small, trace_id)} == {"big"}


# ---- partial success ---------------------------------------------------------------------------------


def pb_request_with_bad_spans() -> tuple[bytes, str, set[tuple[str, str, str]]]:
    """Two good spans beside three bad ones: (body, good trace id, the good spans)."""
    trace_id, good_a, good_b = new_trace_id(), new_span_id(), new_span_id()
    request = pb_request(
        pb_span(trace_id, good_a, "good a"),
        pb_span(trace_id[:15], new_span_id(), "short trace id"),
        pb_span(trace_id, bytes(8), "all-zero span id"),
        pb_span(trace_id, new_span_id(), ""),  # the name is required
        pb_span(trace_id, good_b, "good b", parent=good_a),
    )
    good = {(trace_id.hex(), good_a.hex(), "good a"), (trace_id.hex(), good_b.hex(), "good b")}
    return request.SerializeToString(), trace_id.hex(), good


def test_http_protobuf_partial_success(shared: ServeProcess) -> None:
    body, trace_id, good = pb_request_with_bad_spans()

    response = post_ok_protobuf(shared, body)

    assert response.HasField("partial_success")
    assert response.partial_success.rejected_spans == 3
    assert response.partial_success.error_message
    assert stored_spans(shared, trace_id) == good


def test_http_json_partial_success(shared: ServeProcess) -> None:
    trace_id, good_a, good_b = new_trace_id().hex(), new_span_id().hex(), new_span_id().hex()
    body = json_request(
        json_span(trace_id, good_a, "good a"),
        json_span(trace_id[:30], new_span_id().hex(), "short trace id"),
        json_span(trace_id, "0" * 16, "all-zero span id"),
        {k: v for k, v in json_span(trace_id, new_span_id().hex()).items() if k != "name"},
        json_span(base64.b64encode(bytes.fromhex(trace_id)).decode(), good_b, "base64 trace id"),
        json_span(trace_id, good_b, "good b"),
    )

    reply = http_call(shared, body, JSON)

    assert (reply.status, reply.headers["content-type"]) == (200, JSON)
    partial = json.loads(reply.body)["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 4
    assert partial["errorMessage"]
    assert stored_spans(shared, trace_id) == {(trace_id, good_a, "good a"), (trace_id, good_b, "good b")}


def test_grpc_partial_success(shared: ServeProcess) -> None:
    body, trace_id, good = pb_request_with_bad_spans()

    response = ExportTraceServiceResponse.FromString(grpc_export(shared, body))

    assert response.partial_success.rejected_spans == 3
    assert response.partial_success.error_message
    assert stored_spans(shared, trace_id) == good


# ---- content kept as received ----------------------------------------------------------------------


def test_non_json_tool_arguments_are_kept_raw_and_flagged(shared: ServeProcess) -> None:
    trace_id, root, tool = new_trace_id(), new_span_id(), new_span_id()
    raw = "{'query': not json"
    request = pb_request(
        pb_span(trace_id, root, "invoke_agent helper", attributes={"gen_ai.operation.name": "invoke_agent"}),
        pb_span(
            trace_id,
            tool,
            "execute_tool search",
            parent=root,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.arguments": raw,
            },
        ),
    )

    assert not post_ok_protobuf(shared, request.SerializeToString()).HasField("partial_success")

    rows = query_stored(
        shared,
        "SELECT span_id, tool_name, arguments, arguments_raw, arguments_error FROM executions "
        "WHERE trace_id = ?",
        [trace_id.hex()],
    )
    assert len(rows) == 1
    span_id, tool_name, arguments, arguments_raw, arguments_error = rows[0]
    assert (span_id, tool_name, arguments, arguments_raw) == (tool.hex(), "search", None, raw)
    assert arguments_error


def test_all_zero_parent_id_means_a_root_span(shared: ServeProcess) -> None:
    """The all-zero id is W3C's invalid span id; converters (and the Collector's pdata) use it for "none"."""
    trace_id, pb_id, json_id = new_trace_id(), new_span_id(), new_span_id()
    json_root = json_span(trace_id.hex(), json_id.hex(), "json root") | {"parentSpanId": "0" * 16}
    pb_root = pb_span(trace_id, pb_id, "protobuf root", parent=bytes(8))

    assert not post_ok_protobuf(shared, pb_request(pb_root).SerializeToString()).HasField("partial_success")
    assert http_call(shared, json_request(json_root), JSON).status == 200

    rows = query_stored(
        shared, "SELECT span_id, parent_span_id FROM spans WHERE trace_id = ?", [trace_id.hex()]
    )
    assert sorted(rows) == sorted([(pb_id.hex(), None), (json_id.hex(), None)])


# ---- duplicates --------------------------------------------------------------------------------------


def test_resent_requests_store_each_span_once(shared: ServeProcess) -> None:
    trace_id = new_trace_id()
    ids = [new_span_id() for _ in range(3)]
    body = pb_request(*(pb_span(trace_id, i, f"span {n}") for n, i in enumerate(ids))).SerializeToString()

    for _ in range(2):
        assert not post_ok_protobuf(shared, body).HasField("partial_success")
        assert grpc_export(shared, body) == b""

    rows = query_stored(
        shared, "SELECT span_id, count(*) FROM spans WHERE trace_id = ? GROUP BY 1", [trace_id.hex()]
    )
    assert sorted(rows) == sorted((i.hex(), 1) for i in ids)


# ---- gRPC -------------------------------------------------------------------------------------------


def test_grpc_full_success(shared: ServeProcess) -> None:
    trace_id, root, child, zipped = new_trace_id(), new_span_id(), new_span_id(), new_span_id()
    plain = pb_request(pb_span(trace_id, root, "root"), pb_span(trace_id, child, "child", parent=root))
    compressed = pb_request(pb_span(trace_id, zipped, "gzipped", parent=root))

    responses = [
        grpc_export(shared, plain.SerializeToString()),
        grpc_export(shared, compressed.SerializeToString(), grpc.Compression.Gzip),
    ]

    assert responses == [b"", b""]  # ExportTraceServiceResponse with partial_success unset
    assert not ExportTraceServiceResponse.FromString(responses[0]).HasField("partial_success")
    assert stored_spans(shared, trace_id.hex()) == {
        (trace_id.hex(), root.hex(), "root"),
        (trace_id.hex(), child.hex(), "child"),
        (trace_id.hex(), zipped.hex(), "gzipped"),
    }


def test_grpc_empty_request_is_full_success(shared: ServeProcess) -> None:
    assert grpc_export(shared, b"") == b""


def test_grpc_garbage_is_invalid_argument(shared: ServeProcess) -> None:
    error = grpc_refusal(shared.grpc_endpoint, b"this is not protobuf \xff\xfe")

    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details()
    probe_stored(shared, grpc_still_serving(shared))


def test_grpc_oversize_is_resource_exhausted_without_retry_info(small: ServeProcess) -> None:
    body, trace_id = big_request(2 * MIB)

    error = grpc_refusal(small.grpc_endpoint, body)

    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # RESOURCE_EXHAUSTED is retryable only with RetryInfo: an oversize request must not be re-sent.
    metadata = dict(error.trailing_metadata() or ())
    assert "google.rpc.retryinfo-bin" not in metadata
    details = status_pb2.Status.FromString(metadata.get("grpc-status-details-bin", b"")).details
    assert not any(d.Is(error_details_pb2.RetryInfo.DESCRIPTOR) for d in details)
    probe = grpc_still_serving(small)
    assert stored_spans(small, trace_id, probe[0]) == {(*probe, "probe")}


def test_grpc_gzip_bomb_is_resource_exhausted(small: ServeProcess) -> None:
    body, trace_id = big_request(4 * MIB)  # compresses to a few KiB

    error = grpc_refusal(small.grpc_endpoint, body, grpc.Compression.Gzip)

    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    probe = grpc_still_serving(small)
    assert stored_spans(small, trace_id, probe[0]) == {(*probe, "probe")}


# ---- the real SDK exporters ------------------------------------------------------------------------


SDK_EXPORTS: dict[str, tuple[str, object]] = {
    "sdk-grpc": ("grpc", None),
    "sdk-grpc-gzip": ("grpc", grpc.Compression.Gzip),  # the gRPC exporter takes grpc's own enum
    "sdk-http": ("http", None),
    "sdk-http-gzip": ("http", HttpCompression.Gzip),
}


def export_with_sdk(server: ServeProcess, service: str, protocol: str, compression: object) -> dict[str, Any]:
    """Two spans (parent, child) through the real SDK and exporter; returns the rows expected for them."""
    kwargs = {"compression": compression} if compression is not None else {}
    provider = _otel.provider(server, protocol, service=service, **kwargs)
    tracer = provider.get_tracer("tests.sdk", "0.1")
    child_attributes: dict[str, AttributeValue] = {"tags": ("a", "b"), "ok": True}
    with (
        tracer.start_as_current_span("parent", attributes={"run.number": 7}) as parent,
        tracer.start_as_current_span("child", attributes=child_attributes) as child,
    ):
        pass
    assert provider.force_flush(30_000)
    provider.shutdown()
    trace_id = f"{parent.get_span_context().trace_id:032x}"
    parent_id = f"{parent.get_span_context().span_id:016x}"
    child_id = f"{child.get_span_context().span_id:016x}"
    return {
        "trace_id": trace_id,
        "rows": [
            (parent_id, None, "parent", 1, service, "tests.sdk", "0.1", {"run.number": 7}),
            (child_id, parent_id, "child", 1, service, "tests.sdk", "0.1", {"tags": ["a", "b"], "ok": True}),
        ],
    }


def test_sdk_exporters(shared: ServeProcess) -> None:
    expected = {
        service: export_with_sdk(shared, service, protocol, compression)
        for service, (protocol, compression) in SDK_EXPORTS.items()
    }

    rows = query_stored(
        shared,
        "SELECT service_name, trace_id, span_id, parent_span_id, name, kind, service_name, scope_name, "
        "scope_version, attributes FROM spans WHERE service_name LIKE 'sdk-%' ORDER BY name DESC",
    )
    stored: dict[str, dict[str, Any]] = {}
    for service, trace_id, *columns, attributes in rows:
        entry = stored.setdefault(service, {"trace_id": trace_id, "rows": []})
        assert entry["trace_id"] == trace_id, service
        entry["rows"].append((*columns, json.loads(attributes)))
    assert stored == expected


# ---- overload: a backlog that never drains (in-process, deterministic) --------------------------------


def _stuck_ingest(connection: duckdb.DuckDBPyConnection) -> Ingest:
    """An Ingest whose writer never starts, with one span already waiting: every request is refused."""
    writer = Writer(connection, WriterSettings())
    span = domain_span("1" * 32, "2" * 16, name="waiting", resource=Resource({}, "", ""))
    writer.submit(WriteJob(prepare_spans([span]), lambda error: None))
    # A writer that never runs never makes room: waiting for a turn would only slow the test.
    return Ingest(writer, max_backlog_spans=1, retry_after_s=3, max_wait_s=0.05, max_deadline_wait_s=0.05)


def test_overload_is_a_retryable_refusal(tmp_path: Path) -> None:
    connection = open_writer(tmp_path / "x.duckdb")
    ingest = _stuck_ingest(connection)
    body, _, _ = one_span_request()

    async def scenario() -> tuple[Reply, Reply, grpc.RpcError]:
        runner, http_port = await start_http(build_app(ingest, MIB), "127.0.0.1", 0)
        try:
            protobuf_reply = await asyncio.to_thread(http_request, http_port, body, PROTOBUF)
            json_reply = await asyncio.to_thread(http_request, http_port, b"{}", JSON)
        finally:
            await runner.cleanup()
        grpc_server, grpc_port = await start_grpc(ingest, "127.0.0.1:0", MIB)
        try:
            refused = await asyncio.to_thread(grpc_refusal, f"127.0.0.1:{grpc_port}", body)
        finally:
            await grpc_server.stop(None)
        return protobuf_reply, json_reply, refused

    try:
        protobuf_reply, json_reply, refusal = asyncio.run(scenario())
    finally:
        connection.close()

    assert (protobuf_reply.status, protobuf_reply.headers["retry-after"]) == (503, "3")
    status = http_status_body(protobuf_reply)
    assert (status.code, bool(status.message)) == (code_pb2.UNAVAILABLE, True)
    assert (json_reply.status, json_reply.headers["retry-after"]) == (503, "3")
    assert json_reply.headers["content-type"] == JSON
    assert json.loads(json_reply.body)["code"] == code_pb2.UNAVAILABLE

    assert refusal.code() == grpc.StatusCode.UNAVAILABLE
    metadata = dict(refusal.trailing_metadata() or ())
    details = status_pb2.Status.FromString(metadata["grpc-status-details-bin"])
    assert details.code == code_pb2.UNAVAILABLE
    (packed,) = details.details
    retry = error_details_pb2.RetryInfo()
    assert packed.Unpack(retry)
    assert retry.retry_delay.seconds == 3
    assert error_details_pb2.RetryInfo.FromString(metadata["google.rpc.retryinfo-bin"]) == retry
    assert ingest.stats.requests_refused == 3

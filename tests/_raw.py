"""Raw OTLP requests with known span ids, and their answers read the way a client reads them.

For the reliability tests: each request's spans are named, so what was acknowledged, what was refused
and what the database holds can be compared span by span.
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
PROTOBUF = "application/x-protobuf"
START_NS = 1_700_000_000_000_000_000


def request(names: list[str], *, padding: int = 0) -> tuple[bytes, list[str]]:
    """One serialized request of one trace whose spans have these names (an attribute of `padding` bytes
    each makes the request as large as a test needs); returns it with the names."""
    message = ExportTraceServiceRequest()
    scope = message.resource_spans.add().scope_spans.add()
    scope.scope.name = "tests.reliability"
    trace_id = os.urandom(16)
    for name in names:
        span = Span(
            trace_id=trace_id,
            span_id=os.urandom(8),
            name=name,
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=START_NS,
            end_time_unix_nano=START_NS + 1_000,
        )
        if padding:
            span.attributes.append(KeyValue(key="padding", value=AnyValue(string_value="x" * padding)))
        scope.spans.append(span)
    return bytes(message.SerializeToString()), names


@dataclass(frozen=True)
class Answer:
    """What a client learns: ok, a retryable refusal (with its back-off), a final refusal, or nothing."""

    kind: str  # "ok", "retryable", "refused", "no answer"
    code: str
    retry_after: float | None = None
    message: str = ""


def post_http(port: int, body: bytes, timeout_s: float = 30.0) -> Answer:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        connection.request("POST", "/v1/traces", body=body, headers={"Content-Type": PROTOBUF})
        response = connection.getresponse()
        payload = response.read()
    except OSError as exc:
        return Answer("no answer", type(exc).__name__, message=str(exc))
    finally:
        connection.close()
    if response.status == 200:
        return Answer("ok", "200")
    message = status_pb2.Status.FromString(payload).message if payload else ""
    retry_after = response.getheader("Retry-After")
    kind = "retryable" if response.status in (429, 502, 503, 504) else "refused"
    return Answer(kind, str(response.status), float(retry_after) if retry_after else None, message)


_RETRYABLE = {
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DATA_LOSS,
}


def _identity(data: bytes) -> bytes:
    return data


class GrpcSender:
    """One channel, reused, as an exporter keeps it."""

    def __init__(self, endpoint: str) -> None:
        self._channel = grpc.insecure_channel(endpoint)
        self._export = self._channel.unary_unary(
            EXPORT, request_serializer=_identity, response_deserializer=_identity
        )

    def send(self, body: bytes, timeout_s: float = 30.0) -> Answer:
        try:
            self._export(body, timeout=timeout_s)
        except grpc.RpcError as error:
            code = error.code()
            metadata = dict(error.trailing_metadata() or ())
            retry_after = None
            details = metadata.get("grpc-status-details-bin")
            if details:
                for packed in status_pb2.Status.FromString(details).details:
                    info = error_details_pb2.RetryInfo()
                    if packed.Unpack(info):
                        retry_after = info.retry_delay.seconds + info.retry_delay.nanos / 1e9
            # A refusal with RESOURCE_EXHAUSTED is retried by clients only when it carries RetryInfo.
            retryable = code in _RETRYABLE or (code == grpc.StatusCode.RESOURCE_EXHAUSTED and retry_after)
            kind = "retryable" if retryable else "refused"
            if code == grpc.StatusCode.DEADLINE_EXCEEDED or (
                code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED) and not metadata
            ):
                # Timed out, the connection failed, or gRPC itself cancelled a call that reached the
                # listener as it closed (no handler ran): nothing was said about the spans.
                kind = "no answer"
            return Answer(kind, code.name, retry_after, error.details() or "")
        return Answer("ok", "OK")

    def close(self) -> None:
        self._channel.close()


def get_json(port: int, path: str, timeout_s: float = 10.0) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout_s) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")

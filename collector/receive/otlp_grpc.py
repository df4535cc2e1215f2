"""OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export`.

Requests arrive as raw bytes (no deserializer) so decoding, and its errors, are ours. gRPC itself
decompresses gzip and refuses messages over the size limit with RESOURCE_EXHAUSTED (no RetryInfo, so
clients do not retry an oversize request).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from collector.decode.decoded import UndecodableRequest
from collector.receive._bad_requests import BadRequestLog
from collector.receive.ingest import Ingest
from collector.receive.intake import Hold, cost_of
from collector.store.writer import StoreUnavailable

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
RESPONSE_LIMIT_BYTES = 4 * 1024 * 1024


def _retry_metadata(message: str, retry_after_s: int) -> tuple[tuple[str, bytes], ...]:
    retry = error_details_pb2.RetryInfo(retry_delay=Duration(seconds=retry_after_s))
    status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=message)
    status.details.add().Pack(retry)
    # The standard place is grpc-status-details-bin; opentelemetry-python's exporter reads
    # google.rpc.retryinfo-bin, so both are sent.
    return (
        ("grpc-status-details-bin", status.SerializeToString()),
        ("google.rpc.retryinfo-bin", retry.SerializeToString()),
    )


def _bad_request_metadata(message: str) -> tuple[tuple[str, bytes], ...]:
    status = status_pb2.Status(code=code_pb2.INVALID_ARGUMENT, message=message)
    return (("grpc-status-details-bin", status.SerializeToString()),)


@dataclass(frozen=True, slots=True)
class _Abort:
    code: grpc.StatusCode
    message: str
    metadata: tuple[tuple[str, bytes], ...]


async def _export(ingest: Ingest, request: bytes, time_left_s: float | None) -> bytes | _Abort:
    # Before decoding (gRPC has already received the body); over the watermark, or if the bytes it will
    # hold decoded do not fit beside the other requests' (collector/receive/intake.py), waits its turn.
    hold = Hold(cost_of(len(request)))
    refusal = await ingest.admit(len(request), time_left_s, hold)
    if refusal is not None:
        return _Abort(grpc.StatusCode.UNAVAILABLE, refusal, _retry_metadata(refusal, ingest.retry_after_s))
    try:
        stored = await ingest.store(request, "protobuf")
    except UndecodableRequest as exc:
        ingest.stats.requests_invalid += 1
        return _Abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc), _bad_request_metadata(str(exc)))
    except StoreUnavailable as exc:
        return _Abort(grpc.StatusCode.UNAVAILABLE, str(exc), _retry_metadata(str(exc), ingest.retry_after_s))
    finally:
        ingest.release(hold)  # answered, refused, failed, or the call cancelled alike
    response = ExportTraceServiceResponse()
    # A message without rejected spans is a warning (attributes dropped): OTLP's partial_success says so.
    if stored.rejected or stored.error_message:
        response.partial_success.rejected_spans = stored.rejected
        response.partial_success.error_message = stored.error_message[: RESPONSE_LIMIT_BYTES // 2]
    return bytes(response.SerializeToString())


def export_handler(ingest: Ingest) -> grpc.RpcMethodHandler:
    bad_requests = BadRequestLog("OTLP/gRPC")

    async def export(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        answer = await _export(ingest, request, context.time_remaining())
        # `abort` raises, and its exception's traceback and this frame make a reference cycle, which
        # only the cyclic collector frees, rarely in serve (GC_THRESHOLDS): the body must not be in it.
        # Measured: 300 refused requests of 260 kB kept ~80 MB resident until a full collection.
        del request
        if isinstance(answer, _Abort):
            if answer.code == grpc.StatusCode.INVALID_ARGUMENT:
                bad_requests.refused(context.peer(), "undecodable", "INVALID_ARGUMENT", answer.message)
            await context.abort(answer.code, answer.message, answer.metadata)
            raise AssertionError("unreachable: abort raises")
        return answer

    return grpc.unary_unary_rpc_method_handler(export)


async def start_grpc(
    ingest: Ingest,
    address: str,
    max_request_bytes: int,
    add_services: Callable[[grpc.aio.Server], None] | None = None,
    *,
    credentials: grpc.ServerCredentials | None = None,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server(
        interceptors=list(interceptors),
        options=[
            ("grpc.max_receive_message_length", max_request_bytes),
            ("grpc.max_send_message_length", RESPONSE_LIMIT_BYTES),
            ("grpc.so_reuseport", 0),
        ],
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Export": export_handler(ingest)}),)
    )
    if add_services is not None:
        add_services(server)
    port = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    await server.start()
    return server, port

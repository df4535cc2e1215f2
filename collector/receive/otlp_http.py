"""OTLP/HTTP: `POST /v1/traces`, protobuf or JSON, optionally gzip-compressed.

Capacity is checked before the body is read, and the bytes the request will hold are counted from
then until its answer (collector/receive/intake.py): its announced `Content-Length`, or, for a chunked
or compressed body, what is read and inflated so far. The size limit applies to the decompressed body,
which is inflated in bounded steps so a gzip bomb costs at most the limit. A body that does not arrive
within the body timeout is answered 408 and its connection closed; a connection without a complete
request head for the header timeout (idle, or headers trickling in) is closed by aiohttp's keep-alive
timer, which runs from the connection's start. Error bodies are `google.rpc.Status` in the request's
encoding, as the OTLP spec asks.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from collector.decode.decoded import UndecodableRequest
from collector.decode.prepare import PreparedRequest
from collector.receive._bad_requests import BadRequestLog
from collector.receive.ingest import Ingest
from collector.receive.intake import Hold, cost_of
from collector.store.writer import StoreUnavailable

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_CHUNK = 64 * 1024
# What a gzip body is expected to inflate to, counted at admission so that most do not have to grow
# their count while inflating (and be refused when that does not fit): bench/workload.py's requests
# compress 5.2 times. A body that inflates more is counted as it does.
_GZIP_RATIO = 5


class _TooLarge(Exception):
    pass


class _NoRoom(Exception):
    """A chunked or compressed body grew past what fits beside the other requests in flight."""


class _SlowBody(Exception):
    """The body did not arrive within the body timeout."""


@dataclass(frozen=True, slots=True)
class HttpTimeouts:
    """How long OTLP/HTTP waits on a client (as the OpenTelemetry Collector's `read_header_timeout`,
    `idle_timeout` and `read_timeout`, whose defaults are 1 minute, 1 minute and none)."""

    header_s: float = 60.0  # from the connection's start or its last answer to a complete request head
    body_s: float = 60.0  # from the start of reading a body to its end


def _status_body(content_type: str, code: int, message: str) -> bytes:
    if content_type == JSON:
        return json.dumps({"code": code, "message": message}).encode()
    return bytes(status_pb2.Status(code=code, message=message).SerializeToString())


def _error(content_type: str, http_status: int, grpc_code: int, message: str, **headers: str) -> web.Response:
    body_type = content_type if content_type in (PROTOBUF, JSON) else JSON
    return web.Response(
        status=http_status,
        body=_status_body(body_type, grpc_code, message),
        content_type=body_type,
        headers=headers,
    )


def _count(ingest: Ingest, hold: Hold, size: int) -> None:
    """The request now holds a body of `size` bytes: count what is beyond what it was admitted for."""
    more = cost_of(size) - hold.held
    if more > 0 and not ingest.grow(hold, more):
        raise _NoRoom


async def _read_capped(request: web.Request, limit: int, ingest: Ingest, hold: Hold) -> bytes:
    if request.content_length is not None and request.content_length > limit:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.content.iter_chunked(_CHUNK):
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            _count(ingest, hold, size)  # a chunked body, or one longer than announced
            chunks.append(chunk)
    except BaseException:
        # The exception's traceback keeps this frame, and the request's stream keeps a client's
        # disconnection error: a cycle, which would keep what was read until a full collection.
        chunks.clear()
        raise
    return b"".join(chunks)


def _gunzip_capped(body: bytes, limit: int, ingest: Ingest, hold: Hold) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out, size = [], 0
    data = body
    try:
        while data:
            piece = inflater.decompress(data, _CHUNK)
            size += len(piece)
            if size > limit:
                raise _TooLarge
            _count(ingest, hold, len(body) + size)  # the compressed body is held while it inflates
            out.append(piece)
            data = inflater.unconsumed_tail
        tail = inflater.flush()
    except zlib.error as exc:
        raise UndecodableRequest(f"body is not valid gzip: {exc}") from exc
    if size + len(tail) > limit:
        raise _TooLarge
    if not inflater.eof:
        raise UndecodableRequest("body is not valid gzip: the stream is truncated")
    out.append(tail)
    return b"".join(out)


def _success(content_type: str, stored: PreparedRequest) -> web.Response:
    # A message without rejected spans is a warning (attributes dropped): OTLP's partial_success says so.
    if content_type == JSON:
        document: dict[str, object] = {}
        if stored.rejected or stored.error_message:
            document["partialSuccess"] = {
                "rejectedSpans": str(stored.rejected),
                "errorMessage": stored.error_message,
            }
        return web.Response(body=json.dumps(document).encode(), content_type=JSON)
    response = ExportTraceServiceResponse()
    if stored.rejected or stored.error_message:
        response.partial_success.rejected_spans = stored.rejected
        response.partial_success.error_message = stored.error_message
    return web.Response(body=bytes(response.SerializeToString()), content_type=PROTOBUF)


def _peer(request: web.Request) -> str:
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return request.remote or ""


def traces_handler(ingest: Ingest, max_request_bytes: int, timeouts: HttpTimeouts):  # type: ignore[no-untyped-def]
    bad_requests = BadRequestLog("OTLP/HTTP")

    async def traces(request: web.Request) -> web.StreamResponse:
        content_type = request.content_type.lower()
        if content_type not in (PROTOBUF, JSON):
            message = f"unsupported Content-Type {content_type!r}: send {PROTOBUF} or {JSON}"
            bad_requests.refused(_peer(request), "content-type", "415", message)
            return _error(JSON, 415, 3, message)
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", ""):
            message = f"unsupported Content-Encoding {encoding!r}: send gzip or none"
            bad_requests.refused(_peer(request), "content-encoding", "415", message)
            return _error(content_type, 415, 3, message)
        limit = max_request_bytes
        announced = request.content_length
        if announced is not None and announced > limit:
            ingest.stats.requests_oversize += 1
            bad_requests.refused(_peer(request), "oversize", "413", _too_large_message(limit))
            return _too_large(content_type, limit)
        # Counted before the body is read: what it announces (and, gzipped, what that should inflate
        # to, within the limit); a chunked body is counted as it is read.
        expected = announced or 0
        if encoding == "gzip":
            expected += min(limit, expected * _GZIP_RATIO)
        hold = Hold(cost_of(expected))
        # Before the body is read; over the watermark, or if its bytes do not fit, it waits its turn.
        refusal = await ingest.admit(hold=hold)
        if refusal is not None:
            return _error(content_type, 503, 14, refusal, **{"Retry-After": str(ingest.retry_after_s)})
        try:
            return await _receive(
                request, content_type, encoding, limit, timeouts, ingest, hold, bad_requests
            )
        finally:
            ingest.release(hold)  # answered, refused, timed out, failed or abandoned alike

    return traces


async def _receive(
    request: web.Request,
    content_type: str,
    encoding: str,
    limit: int,
    timeouts: HttpTimeouts,
    ingest: Ingest,
    hold: Hold,
    bad_requests: BadRequestLog,
) -> web.Response:
    retry_after = {"Retry-After": str(ingest.retry_after_s)}
    try:
        try:
            async with asyncio.timeout(timeouts.body_s):
                body = await _read_capped(request, limit, ingest, hold)
        except TimeoutError:
            raise _SlowBody from None
        if encoding == "gzip":
            body = _gunzip_capped(body, limit, ingest, hold)
        stored = await ingest.store(body, "protobuf" if content_type == PROTOBUF else "json")
    except _SlowBody:
        ingest.stats.requests_invalid += 1
        message = f"the request body did not arrive within {timeouts.body_s:g} s"
        bad_requests.refused(_peer(request), "slow-body", "408", message)
        return await _answer_and_close(request, _error(content_type, 408, 4, message))
    except _NoRoom:
        ingest.stats.requests_refused += 1
        refusal = _error(content_type, 503, 14, ingest.full_reason(), **retry_after)
        return await _answer_and_close(request, refusal)
    except _TooLarge:
        ingest.stats.requests_oversize += 1
        bad_requests.refused(_peer(request), "oversize", "413", _too_large_message(limit))
        return _too_large(content_type, limit)
    except ConnectionResetError:  # the client left in the middle of its body: nobody reads an answer
        return _error(content_type, 400, 1, "the client closed the connection before its body arrived")
    except UndecodableRequest as exc:
        ingest.stats.requests_invalid += 1
        bad_requests.refused(_peer(request), "undecodable", "400", str(exc))
        return _error(content_type, 400, 3, str(exc))
    except StoreUnavailable as exc:
        return _error(content_type, 503, 14, str(exc), **retry_after)
    return _success(content_type, stored)


async def _answer_and_close(request: web.Request, answer: web.Response) -> web.Response:
    """Send the answer, then close the connection: what is left of the body is not waited for (aiohttp
    would otherwise read on for up to 10 s, its lingering time, before closing)."""
    answer.force_close()
    await answer.prepare(request)
    await answer.write_eof()
    if request.protocol is not None:
        request.protocol.force_close()  # the transport sends what it buffered, then closes
    return answer


def _too_large_message(limit: int) -> str:
    return f"request is larger than {limit} bytes after decompression"


def _too_large(content_type: str, limit: int) -> web.Response:
    return _error(content_type, 413, 8, _too_large_message(limit))


def build_app(
    ingest: Ingest,
    max_request_bytes: int,
    middlewares: Sequence[Any] = (),
    timeouts: HttpTimeouts = HttpTimeouts(),
) -> web.Application:
    # aiohttp's own body limit is lifted: ours applies after decompression and answers in OTLP form.
    app = web.Application(client_max_size=max_request_bytes + 1, middlewares=list(middlewares))
    handler = traces_handler(ingest, max_request_bytes, timeouts)
    app.router.add_post("/v1/traces", handler)
    app.router.add_post("/v1/traces/", handler)
    return app


async def start_http(
    app: web.Application,
    host: str,
    port: int,
    ssl_context: ssl.SSLContext | None = None,
    timeouts: HttpTimeouts = HttpTimeouts(),
) -> tuple[web.AppRunner, int]:
    # auto_decompress off: Content-Encoding is decoded here, under the size limit, with 415 for the unknown.
    # aiohttp's keep-alive timer (an hour by default) runs from a connection's start and after each
    # answer, and closes it if no complete request head came meanwhile: the header timeout.
    runner = web.AppRunner(app, auto_decompress=False, access_log=None, keepalive_timeout=timeouts.header_s)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_port=False, ssl_context=ssl_context)
    await site.start()
    server = site._server  # the bound port, when 0 was asked for
    sockets = getattr(server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    return runner, int(bound)

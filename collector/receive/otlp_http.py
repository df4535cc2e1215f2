"""OTLP/HTTP: `POST /v1/traces`, protobuf or JSON, optionally gzip-compressed.

Capacity is checked before the body is read; the size limit applies to the decompressed body, which is
inflated in bounded steps so a gzip bomb costs at most the limit. Error bodies are `google.rpc.Status`
in the request's encoding, as the OTLP spec asks.
"""

from __future__ import annotations

import json
import ssl
import zlib
from collections.abc import Sequence
from typing import Any

from aiohttp import web
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from collector.decode.decoded import UndecodableRequest
from collector.decode.prepare import PreparedRequest
from collector.receive._bad_requests import BadRequestLog
from collector.receive.ingest import Ingest
from collector.store.writer import StoreUnavailable

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_CHUNK = 64 * 1024


class _TooLarge(Exception):
    pass


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


async def _read_capped(request: web.Request, limit: int) -> bytes:
    if request.content_length is not None and request.content_length > limit:
        raise _TooLarge
    chunks, size = [], 0
    async for chunk in request.content.iter_chunked(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _gunzip_capped(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out, size = [], 0
    data = body
    try:
        while data:
            piece = inflater.decompress(data, _CHUNK)
            size += len(piece)
            if size > limit:
                raise _TooLarge
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
    if content_type == JSON:
        document: dict[str, object] = {}
        if stored.rejected:
            document["partialSuccess"] = {
                "rejectedSpans": str(stored.rejected),
                "errorMessage": stored.error_message,
            }
        return web.Response(body=json.dumps(document).encode(), content_type=JSON)
    response = ExportTraceServiceResponse()
    if stored.rejected:
        response.partial_success.rejected_spans = stored.rejected
        response.partial_success.error_message = stored.error_message
    return web.Response(body=bytes(response.SerializeToString()), content_type=PROTOBUF)


def _peer(request: web.Request) -> str:
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return request.remote or ""


def traces_handler(ingest: Ingest, max_request_bytes: int):  # type: ignore[no-untyped-def]
    bad_requests = BadRequestLog("OTLP/HTTP")

    def refuse(request: web.Request, kind: str, content_type: str, status: int, message: str) -> web.Response:
        bad_requests.refused(_peer(request), kind, str(status), message)
        return _error(content_type, status, 8 if status == 413 else 3, message)

    async def traces(request: web.Request) -> web.StreamResponse:
        content_type = request.content_type.lower()
        if content_type not in (PROTOBUF, JSON):
            return refuse(
                request,
                "content-type",
                JSON,
                415,
                f"unsupported Content-Type {content_type!r}: send {PROTOBUF} or {JSON}",
            )
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", ""):
            return refuse(
                request,
                "content-encoding",
                content_type,
                415,
                f"unsupported Content-Encoding {encoding!r}: send gzip or none",
            )
        refusal = await ingest.admit()  # before the body is read; over the watermark, waits its turn
        if refusal is not None:
            return _error(content_type, 503, 14, refusal, **{"Retry-After": str(ingest.retry_after_s)})
        limit = max_request_bytes
        try:
            body = await _read_capped(request, limit)
            if encoding == "gzip":
                body = _gunzip_capped(body, limit)
            stored = await ingest.store(body, "protobuf" if content_type == PROTOBUF else "json")
        except _TooLarge:
            ingest.stats.requests_oversize += 1
            message = f"request is larger than {limit} bytes after decompression"
            return refuse(request, "oversize", content_type, 413, message)
        except UndecodableRequest as exc:
            ingest.stats.requests_invalid += 1
            return refuse(request, "undecodable", content_type, 400, str(exc))
        except StoreUnavailable as exc:
            return _error(content_type, 503, 14, str(exc), **{"Retry-After": str(ingest.retry_after_s)})
        return _success(content_type, stored)

    return traces


def build_app(ingest: Ingest, max_request_bytes: int, middlewares: Sequence[Any] = ()) -> web.Application:
    # aiohttp's own body limit is lifted: ours applies after decompression and answers in OTLP form.
    app = web.Application(client_max_size=max_request_bytes + 1, middlewares=list(middlewares))
    handler = traces_handler(ingest, max_request_bytes)
    app.router.add_post("/v1/traces", handler)
    app.router.add_post("/v1/traces/", handler)
    return app


async def start_http(
    app: web.Application, host: str, port: int, ssl_context: ssl.SSLContext | None = None
) -> tuple[web.AppRunner, int]:
    # auto_decompress off: Content-Encoding is decoded here, under the size limit, with 415 for the unknown.
    runner = web.AppRunner(app, auto_decompress=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_port=False, ssl_context=ssl_context)
    await site.start()
    server = site._server  # the bound port, when 0 was asked for
    sockets = getattr(server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    return runner, int(bound)

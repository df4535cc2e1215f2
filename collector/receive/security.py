"""Who may talk to the listeners: TLS (and mTLS), bearer tokens, the Host allow-list, and what a
browser may do.

Defaults: loopback only, no token. Binding elsewhere needs TLS and a token, or `--insecure-listen`.
The token is what OTel exporters send through `OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer …`.

A page in the user's browser can reach a loopback server too: the API (everything but `/v1/traces`)
refuses a request whose `Origin` is another site (403), a preflight gets no `Access-Control-Allow-*`
header, and a POST must carry `Content-Type: application/json` (415), which no page can send to
another origin without a preflight.
"""

from __future__ import annotations

import hmac
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
from aiohttp import web

# Liveness and readiness answer without a token: orchestrators probe them without credentials. The live
# UI's pages (`/`, `/ui/…`, docs/ui.md) hold no data: a browser loads them without the token, which they
# then send with every read of the API.
_OPEN_PATHS = frozenset({"/healthz", "/readyz", "/"})
_OPEN_PREFIX = "/ui/"
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


@dataclass(frozen=True, slots=True)
class Security:
    token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    allowed_hosts: frozenset[str] = frozenset()  # besides loopback names and the bound hosts; "*" = any

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None and self.tls_key is not None

    def token_ok(self, header: str | None) -> bool:
        if self.token is None:
            return True
        if not header or not header.lower().startswith("bearer "):
            return False
        return hmac.compare_digest(header[7:].strip().encode(), self.token.encode())

    def host_ok(self, host_header: str | None, bound_hosts: frozenset[str]) -> bool:
        if "*" in self.allowed_hosts:
            return True
        if not host_header:
            return False
        host = host_header.rsplit(":", 1)[0] if not host_header.endswith("]") else host_header
        if host.startswith("[") and "]" in host:
            host = host[: host.index("]") + 1]
        return host in _LOOPBACK_HOSTS or host in self.allowed_hosts or host in bound_hosts

    def origin_ok(self, origin: str | None, host_header: str | None) -> bool:
        """A request from a browser page (it carries `Origin`) is the API's only from a page of the API
        itself (same host and port as `Host`) or of a host named in --allowed-hosts (a proxy in front
        that keeps the page and the API on one origin). No `Origin`: not a browser page, allowed."""
        if origin is None:
            return True
        parts = urlsplit(origin.strip().lower())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False  # "null" (sandboxed frames, file://) and anything odd
        if host_header and parts.netloc == host_header.strip().lower():
            return True
        named = self.allowed_hosts - {"*"}  # "*" opens Host names, never other sites' pages
        return parts.hostname in named or f"[{parts.hostname}]" in named

    def http_ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(str(self.tls_cert), str(self.tls_key))
        if self.tls_client_ca is not None:
            context.load_verify_locations(str(self.tls_client_ca))
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def grpc_credentials(self) -> grpc.ServerCredentials | None:
        if not self.tls:
            return None
        assert self.tls_cert is not None and self.tls_key is not None
        client_ca = self.tls_client_ca.read_bytes() if self.tls_client_ca is not None else None
        return grpc.ssl_server_credentials(
            [(self.tls_key.read_bytes(), self.tls_cert.read_bytes())],
            root_certificates=client_ca,
            require_client_auth=client_ca is not None,
        )


def http_middleware(security: Security, bound_hosts: frozenset[str]) -> Any:
    @web.middleware
    async def guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        api = not request.path.startswith("/v1/")
        host = request.headers.get("Host")
        # DNS rebinding reaches loopback from a browser: the API answers only to hosts it knows.
        if api and not security.host_ok(host, bound_hosts):
            return web.json_response({"error": "Host header not allowed (see --allowed-hosts)"}, status=421)
        # Another site's page in the user's browser: refused before anything is read or run. A CORS
        # preflight from it is refused the same way, with no Access-Control-Allow-* header, ever.
        if api and not security.origin_ok(request.headers.get("Origin"), host):
            return web.json_response(
                {"error": "requests from another site's web page are not allowed (Origin refused)"},
                status=403,
            )
        open_path = request.path in _OPEN_PATHS or request.path.startswith(_OPEN_PREFIX)
        if not open_path and not security.token_ok(request.headers.get("Authorization")):
            return web.json_response(
                {"error": "missing or wrong bearer token"}, status=401, headers={"WWW-Authenticate": "Bearer"}
            )
        # A JSON body only: text/plain and form bodies are what a page may send anywhere unasked.
        if api and request.method == "POST" and request.content_type != "application/json":
            return web.json_response(
                {
                    "error": "send the body as Content-Type: application/json "
                    f"(got {request.headers.get('Content-Type') or 'none'})"
                },
                status=415,
            )
        return await handler(request)

    return guard


class TokenInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Every gRPC method (OTLP and the API) needs the bearer token when one is configured."""

    def __init__(self, security: Security) -> None:
        self._security = security

        async def deny(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        metadata = dict(details.invocation_metadata or ())
        if self._security.token_ok(metadata.get("authorization")):
            return await continuation(details)
        return self._deny

#!/usr/bin/env python3
"""Health probe for a tracescore container: GET /healthz (or the path given) on the local HTTP listener.

    tracescore-healthcheck [/healthz | /readyz]

Standard library only, because slim images have no curl. It reads the variables `tracescore serve`
reads: TRACESCORE_HTTP for the address (a wildcard host means this container's loopback) and
TRACESCORE_TLS_CERT to choose https. Exit 0 on HTTP 200, 1 otherwise: Docker's HEALTHCHECK and
Kubernetes exec probes go by the exit code.

Over TLS the certificate is not verified: the probe talks to its own process, in its own network
namespace, and asks only whether it answers. /healthz and /readyz need no token. A server with mTLS
(TRACESCORE_TLS_CLIENT_CA) wants a client certificate from every caller, this probe included: give it
one with TRACESCORE_HEALTHCHECK_CERT and TRACESCORE_HEALTHCHECK_KEY.
"""

from __future__ import annotations

import os
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping

_WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}


def probe_url(environ: Mapping[str, str], path: str) -> str:
    address = environ.get("TRACESCORE_HTTP") or "127.0.0.1:4318"
    host, _, port = address.rpartition(":")
    host = _WILDCARDS.get(host, host.strip("[]")) or "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    scheme = "https" if environ.get("TRACESCORE_TLS_CERT") else "http"
    return f"{scheme}://{host}:{port}{path}"


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else "/healthz"
    url = probe_url(os.environ, path)
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]  # never via a proxy
    if url.startswith("https:"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        cert = os.environ.get("TRACESCORE_HEALTHCHECK_CERT")
        if cert:
            context.load_cert_chain(cert, os.environ.get("TRACESCORE_HEALTHCHECK_KEY") or None)
        handlers.append(urllib.request.HTTPSHandler(context=context))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(url, timeout=float(os.environ.get("TRACESCORE_HEALTHCHECK_TIMEOUT", "4"))) as answer:
            status = int(answer.status)
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError) as exc:
        print(f"tracescore-healthcheck: {url}: {exc}", file=sys.stderr)
        return 1
    if status != 200:
        print(f"tracescore-healthcheck: {url}: HTTP {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Hand-built OTLP/JSON requests, for tests that need exact ids and timing."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any


def new_trace_id() -> str:
    return os.urandom(16).hex()


def new_span_id() -> str:
    return os.urandom(8).hex()


def attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def span(
    trace_id: str,
    span_id: str,
    name: str,
    *,
    parent: str | None = None,
    start_ns: int = 1_700_000_000_000_000_000,
    duration_ns: int = 1_000_000,
    attributes: dict[str, Any] | None = None,
    status_code: int = 0,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + duration_ns),
        "attributes": [attr(k, v) for k, v in (attributes or {}).items()],
        "status": {"code": status_code},
    }
    if parent:
        document["parentSpanId"] = parent
    return document


def request(spans: list[dict[str, Any]], service: str = "test-agent", scope: str = "tests") -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", service)]},
                "scopeSpans": [{"scope": {"name": scope}, "spans": spans}],
            }
        ]
    }


def post_json(url: str, document: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    body = json.dumps(document).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")

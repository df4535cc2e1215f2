"""A refused OTLP request is logged by `serve`, one line naming the peer, the protocol and the reason,
at most once per kind of refusal per 10 s (issue 28: a misconfigured exporter was invisible from the
terminal, only a counter in /metrics said anything)."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request

import grpc
import pytest

from collector.receive._bad_requests import BadRequestLog
from tests._server import ServeProcess

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _post(server: ServeProcess, body: bytes, content_type: str) -> int:
    request = urllib.request.Request(
        server.http_url, data=body, headers={"Content-Type": content_type}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _grpc_garbage(server: ServeProcess) -> grpc.StatusCode:
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        export = channel.unary_unary(
            EXPORT, request_serializer=lambda b: b, response_deserializer=lambda b: b
        )
        with pytest.raises(grpc.RpcError) as refused:
            export(b"\xff\xff\xff not protobuf", timeout=10)
    code: grpc.StatusCode = refused.value.code()
    return code


def _refusal_lines(server: ServeProcess) -> list[str]:
    """The messages of serve's refusal lines (its log is JSON lines when not on a terminal)."""
    messages = []
    for line in server.log().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        message = str(record.get("message", ""))
        if message.startswith("refused a bad"):
            messages.append(message)
    return messages


def _wait_for_lines(server: ServeProcess, count: int) -> list[str]:
    deadline = time.monotonic() + 10
    while len(lines := _refusal_lines(server)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return lines


def test_each_kind_of_bad_request_is_logged_once_with_peer_protocol_and_reason(server: ServeProcess) -> None:
    for _ in range(5):  # an exporter re-sending the same bad request: one line, not five
        assert _post(server, b"{}", "text/plain") == 415
    assert _post(server, b"\x0a\xff\xff\xff", "application/x-protobuf") == 400
    assert _grpc_garbage(server) == grpc.StatusCode.INVALID_ARGUMENT

    lines = _wait_for_lines(server, 3)
    time.sleep(0.3)  # a line too many would come right after
    lines = _refusal_lines(server)
    assert len(lines) == 3, lines
    content_type, undecodable, grpc_line = lines
    assert content_type.startswith("refused a bad OTLP/HTTP request from 127.0.0.1:")
    assert "(415): unsupported Content-Type 'text/plain'" in content_type
    assert undecodable.startswith("refused a bad OTLP/HTTP request from 127.0.0.1:")
    assert "(400): " in undecodable
    assert grpc_line.startswith("refused a bad OTLP/gRPC request from ipv4:127.0.0.1:")
    assert "(INVALID_ARGUMENT): " in grpc_line
    # The counter still counts every one.
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as response:
        metrics = response.read().decode()
    assert "tracescore_requests_invalid_total 2" in metrics


def test_the_next_line_after_the_quiet_period_counts_those_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    log = BadRequestLog("OTLP/HTTP", every_s=10, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="tracescore.receive"):
        log.refused("10.0.0.1:5000", "undecodable", "400", "not protobuf")
        for _ in range(4):
            now[0] += 1
            log.refused("10.0.0.1:5000", "undecodable", "400", "not protobuf")
        log.refused("10.0.0.2:6000", "content-type", "415", "unsupported Content-Type")  # its own clock
        now[0] = 111.0
        log.refused("10.0.0.1:5001", "undecodable", "400", "not protobuf")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "refused a bad OTLP/HTTP request from 10.0.0.1:5000 (400): not protobuf",
        "refused a bad OTLP/HTTP request from 10.0.0.2:6000 (415): unsupported Content-Type",
        "refused a bad OTLP/HTTP request from 10.0.0.1:5001 (400): not protobuf "
        "(4 more refused as undecodable in the last 11 s, not logged)",
    ]

"""Promise 3, bounded memory under overload.

- Capacity is checked before an HTTP body is read (a 50 MB body announced, a few bytes sent: the 503
  comes back at once) and before a gRPC body is decoded (garbage gets UNAVAILABLE, not INVALID_ARGUMENT).
- Over the watermark requests wait their turn, first come first served, for a bounded time; no
  newcomer overtakes one already waiting; shutdown answers everyone in line at once.
- From concurrent real exporters offering about three times what the server commits (bench/overload.py,
  small here, full size under `make soak`): RSS stays under the documented ceiling, /healthz answers
  throughout, every refusal carries a back-off, and once the load stops sent = stored, span by span.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from bench.overload import run
from collector.decode.prepare import prepare_spans
from collector.model.domain import Resource, Span
from collector.receive import ingest as ingest_module
from collector.receive.ingest import Ingest
from collector.receive.otlp_grpc import start_grpc
from collector.receive.otlp_http import build_app, start_http
from collector.store.database import open_writer
from collector.store.writer import WriteJob, Writer, WriterSettings
from tests._raw import EXPORT

MIB = 1024 * 1024
# Peak RSS of the server in the run below (docs/reliability.md): measured 425 MB on the 2-core test
# machine with --max-backlog-spans 2000 and DuckDB's memory_limit at 128MB (541 MB with --memory-limit 1GB,
# whose DuckDB share is 400 MB, in the seventh session); the ceiling leaves room for noise.
RSS_CEILING_MB = 700
SECONDS = float(os.environ.get("TRACESCORE_OVERLOAD_SECONDS", "4"))


# ---- capacity is checked before the body is read or decoded -------------------------------------------


def _stuck_ingest(tmp_path: Path) -> Ingest:
    """An ingest over its watermark for good: the writer never runs and one span is waiting."""
    writer = Writer(open_writer(tmp_path / "stuck.duckdb"), WriterSettings())
    span = Span(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="waiting",
        kind=1,
        start_ns=1,
        end_ns=2,
        status_code=0,
        status_message="",
        attributes={},
        events=(),
        links=(),
        resource=Resource({}, "", ""),
    )
    writer.submit(WriteJob(prepare_spans([span]), lambda error: None))
    return Ingest(writer, max_backlog_spans=1, retry_after_s=2, max_wait_s=0.05, max_deadline_wait_s=0.05)


def _announce_body(port: int, announced: int) -> tuple[bytes, float]:
    """Headers announcing a large body and only its first bytes; the answer and how long it took."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
            + f"Content-Length: {announced}\r\n\r\n".encode()
            + b"\x0a" * 100
        )
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer, time.monotonic() - started


def test_http_capacity_is_checked_before_the_body_is_read(tmp_path: Path) -> None:
    ingest = _stuck_ingest(tmp_path)

    async def scenario() -> tuple[bytes, float]:
        runner, port = await start_http(build_app(ingest, 64 * MIB), "127.0.0.1", 0)
        try:
            return await asyncio.to_thread(_announce_body, port, 50_000_000)
        finally:
            await runner.cleanup()

    answer, took = asyncio.run(scenario())
    head = answer.decode("latin-1").lower()
    assert head.startswith("http/1.1 503"), head
    assert "retry-after: 2" in head
    assert took < 2, f"the refusal waited for a body that never came ({took:.1f} s)"


def test_grpc_capacity_is_checked_before_decoding(tmp_path: Path) -> None:
    ingest = _stuck_ingest(tmp_path)

    async def scenario() -> grpc.RpcError:
        server, port = await start_grpc(ingest, "127.0.0.1:0", MIB)
        try:
            return await asyncio.to_thread(_grpc_garbage, f"127.0.0.1:{port}")
        finally:
            await server.stop(None)

    error = asyncio.run(scenario())
    assert error.code() == grpc.StatusCode.UNAVAILABLE  # refused before decoding: not INVALID_ARGUMENT
    metadata = dict(error.trailing_metadata() or ())
    (packed,) = status_pb2.Status.FromString(metadata["grpc-status-details-bin"]).details
    retry = error_details_pb2.RetryInfo()
    assert packed.Unpack(retry) and retry.retry_delay.seconds == 2


def _grpc_garbage(endpoint: str) -> grpc.RpcError:
    with grpc.insecure_channel(endpoint) as channel:
        export = channel.unary_unary(EXPORT, request_serializer=bytes, response_deserializer=bytes)
        try:
            export(b"\xff\xfe not protobuf", timeout=10)
        except grpc.RpcError as error:
            return error
    raise AssertionError("garbage was accepted")


# ---- over the watermark: a fair line ---------------------------------------------------------------


def _ingest(backlog: int, max_wait_s: float = 2.0) -> tuple[Ingest, Any]:
    writer = SimpleNamespace(backlog_spans=backlog, healthy=True, stats=SimpleNamespace(last_error=None))
    return Ingest(writer, max_backlog_spans=100, retry_after_s=1, max_wait_s=max_wait_s), writer  # type: ignore[arg-type]


def test_over_the_watermark_requests_wait_their_turn_in_arrival_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The line is looked at on every commit and every 10 ms; here only when the test says so.
    monkeypatch.setattr(ingest_module, "_TICK_S", 60.0)

    async def scenario() -> list[str]:
        ingest, writer = _ingest(backlog=500)
        order: list[str] = []

        async def request(name: str) -> None:
            assert await ingest.admit() is None
            order.append(name)

        first = asyncio.create_task(request("first"))
        await asyncio.sleep(0.05)
        writer.backlog_spans = 0  # room, but someone is waiting: a newcomer gets in line behind
        newcomer = asyncio.create_task(request("newcomer"))
        await asyncio.sleep(0.05)
        assert ingest.waiting == 2 and not order
        ingest._let_in()  # what a commit does
        await asyncio.gather(first, newcomer)
        assert ingest.stats.requests_refused == 0
        return order

    assert asyncio.run(scenario()) == ["first", "newcomer"]


def test_a_turn_that_does_not_come_in_time_is_a_retryable_refusal() -> None:
    async def scenario() -> tuple[str | None, float, str | None]:
        ingest, _ = _ingest(backlog=500, max_wait_s=0.2)
        started = time.monotonic()
        refused = await ingest.admit()
        waited = time.monotonic() - started
        # A gRPC client whose deadline is nearly spent is told at once, while it can still retry.
        hurried = await ingest.admit(time_left_s=0.3)
        return refused, waited, hurried

    refused, waited, hurried = asyncio.run(scenario())
    assert refused is not None and "ingest queue is full" in refused
    assert 0.15 < waited < 1.0
    assert hurried is not None


def test_shutdown_answers_everyone_in_line_at_once() -> None:
    async def scenario() -> tuple[list[str | None], float]:
        ingest, _ = _ingest(backlog=500, max_wait_s=30)
        waiting = [asyncio.create_task(ingest.admit()) for _ in range(3)]
        await asyncio.sleep(0.05)
        started = time.monotonic()
        ingest.close("tracescore is shutting down")
        answers = await asyncio.gather(*waiting)
        return answers, time.monotonic() - started

    answers, took = asyncio.run(scenario())
    assert answers == ["tracescore is shutting down"] * 3
    assert took < 0.5


# ---- real exporters, several times the sustainable rate --------------------------------------------------


@pytest.mark.timeout(300 + 4 * SECONDS)
def test_overload_from_real_exporters_keeps_memory_bounded_and_loses_nothing(tmp_path: Path) -> None:
    # Four senders: with three (~63 k spans/s offered) a fast day's server sustained 45 k and the load was
    # no longer an overload (factor 1.4); four offer ~84 k (factor ~1.7 measured on the same day).
    figures = run(seconds=SECONDS, grpc_senders=4, threads=32, workdir=tmp_path)
    print("\noverload:", json.dumps(figures))
    assert figures["exit_code"] == 0
    assert figures["overload_factor"] >= 1.5, "the load did not exceed what the server sustains"
    assert figures["rss_mb"]["peak"] < RSS_CEILING_MB, figures["rss_mb"]
    assert figures["healthz"]["failed"] == 0 and figures["healthz"]["max_s"] < 2.0, figures["healthz"]
    probes = figures["probes"]
    assert probes["refusals_without_backoff"] == 0 and probes["refused_but_stored"] == 0, probes
    assert set(figures["grpc"]["attempts_by_outcome"]) <= {"OK", "UNAVAILABLE"}, figures["grpc"]
    assert figures["grpc"]["batches_given_up_by_sdk"] == 0 and figures["http"]["spans_given_up_by_sdk"] == 0
    assert figures["lost_acknowledged_spans"] == 0
    assert figures["spans_stored"] == figures["spans_stored_distinct"], "a span was stored twice"
    assert figures["sent_equals_stored"], {k: figures[k] for k in ("spans_sent", "spans_stored")}

"""Promise 3, memory bounded by bytes (issue 26, part 3), through a real `tracescore serve`.

- A refused body is freed at once: big garbage bodies answered 400 leave the server's resident memory
  where it was (they had kept ~61 MB each, over both protocols, until a rare full collection).
- Requests are admitted by the bytes they will hold, before their bodies are read: concurrent large
  bodies from real exporters keep the server's peak resident memory under its budget, and every span
  is stored once their retries are let in.
- `/readyz` answers 503 while the memory budget is spent (every request refused), 200 once it is not;
  a client that leaves in the middle of its body frees what it had sent.
- Slow and idle OTLP/HTTP connections are closed after the header and body timeouts.
- A request's bytes are counted before its body is read and given back whatever its answer.
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bench.cgroup import MemoryCgroup, memory_cgroup
from tests._held import HeldPeak
from tests._otel import exporter, hex_span
from tests._raw import EXPORT, get_json, post_http, request
from tests._server import ServeProcess

MB = 1000 * 1000
MIB = 1024 * 1024


def _resident_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for {pid}")


@pytest.fixture
def started() -> Iterator[list[ServeProcess]]:
    servers: list[ServeProcess] = []
    yield servers
    for server in servers:
        server.kill()


def _grpc_garbage(endpoint: str, body: bytes) -> grpc.StatusCode:
    options = [("grpc.max_send_message_length", 128 * MIB)]
    with grpc.insecure_channel(endpoint, options=options) as channel:
        export = channel.unary_unary(EXPORT, request_serializer=bytes, response_deserializer=bytes)
        try:
            export(body, timeout=30)
        except grpc.RpcError as error:
            return error.code()  # type: ignore[no-any-return]
    raise AssertionError("garbage was accepted")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_refused_big_bodies_do_not_grow_resident_memory(
    tmp_path: Path, started: list[ServeProcess], protocol: str
) -> None:
    # One decode worker: the refused body's error came back from it through a future whose exception's
    # traceback held the frame that held the future (and the body): a cycle, freed only by a full
    # collection. Measured before the fix: +61 MB resident per 61 MB body, over both protocols.
    server = ServeProcess(tmp_path / "leak.duckdb", extra_args=("--decode-workers", "1"))
    started.append(server.start())
    pid = server.process.pid if server.process else 0
    # Above glibc's largest mmap threshold (32 MiB), so a freed body goes back to the system at once and
    # only what is kept shows; below it, malloc keeps freed bodies for reuse (bounded: measured with
    # 30 MB bodies, ten refusals over gRPC stayed between +50 and +105 MiB, not growing).
    body = b"\xff" * (40 * MB)

    def refuse() -> None:
        if protocol == "http":
            answer = post_http(server.http_port, body)
            assert answer.code == "400", answer
        else:
            assert _grpc_garbage(server.grpc_endpoint, body) == grpc.StatusCode.INVALID_ARGUMENT

    # The first refusal sets up what stays (buffers, the pool's threads): measured from after it. A body
    # is anonymous memory: library pages read for the first time on the way are not counted.
    _wait_ready(server)
    refuse()
    time.sleep(0.5)
    before = _resident_mib(pid, "RssAnon")
    for _ in range(5):
        refuse()
    time.sleep(0.5)
    after_five = _resident_mib(pid, "RssAnon")
    for _ in range(5):
        refuse()
    time.sleep(0.5)
    after_ten = _resident_mib(pid, "RssAnon")
    # Five bodies of 38 MiB kept would be 190 MiB, and five more another 190. Up to three stay (measured:
    # 38 to 72 MiB here, 114 in a clean-clone CI run over gRPC): multiprocessing's feeder thread keeps
    # the last request it pickled for the worker until the next, gRPC its last message's buffers, and
    # malloc some freed heap. What tells a leak is that more refusals add five bodies' worth again: the
    # second bound (two bodies) is the leak's test; the first (four) only has to stay under five.
    grown, more = after_five - before, after_ten - after_five
    assert grown < 152, f"resident memory grew {grown:.0f} MiB over five refused 38 MiB bodies"
    assert more < 76, f"five more refused 38 MiB bodies added {more:.0f} MiB: refused bodies are kept"


def _wait_ready(server: ServeProcess, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, _ = get_json(server.http_port, "/readyz")
        if status == 200:
            return
        time.sleep(0.1)
    raise AssertionError("the server did not become ready")


def _big_spans(count: int, attribute_bytes: int, tag: str) -> list[ReadableSpan]:
    """Finished SDK spans, each with one large attribute, as an application's BatchSpanProcessor holds."""
    memory = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "intake-bytes"}))
    tp.add_span_processor(SimpleSpanProcessor(memory))
    tracer = tp.get_tracer("tests")
    padding = "x" * attribute_bytes
    for i in range(count):
        with tracer.start_as_current_span(f"{tag}-{i}") as span:
            span.set_attribute("payload", padding)
    return list(memory.get_finished_spans())


def test_concurrent_bodies_are_admitted_by_bytes_under_a_budget(
    tmp_path: Path, started: list[ServeProcess]
) -> None:
    # Ten exporters each send a ~12 MB request at once to a server with a 650 MB budget. Before, every
    # body was read and decoded at once: the resident check (every 0.25 s) saw nothing until they were
    # all in memory. Now each request is counted at 8 times its announced size before its body is read,
    # and those that do not fit beside the others wait their turn (then are refused retryably, and the
    # exporter retries).
    budget_mb = 650
    with memory_cgroup(budget_mb * MB) as cgroup:
        # The kernel judges the budget where it can: the server runs in a memory cgroup of the same size,
        # and must not be OOM-killed there; elsewhere, what it holds as a pod is charged must stay under.
        in_cgroup = isinstance(cgroup, MemoryCgroup)
        server = ServeProcess(
            tmp_path / "bytes.duckdb",
            extra_args=(
                "--memory-limit",
                f"{budget_mb}MB",
                "--decode-workers",
                "0",
                "--max-request-mib",
                "32",
            ),
            preexec=cgroup.preexec if isinstance(cgroup, MemoryCgroup) else None,
        )
        started.append(server.start())
        pid = server.process.pid if server.process else 0
        _wait_ready(server)
        batches = [_big_spans(12, MB, f"batch{b}") for b in range(10)]
        results: list[SpanExportResult] = []

        def send(spans: list[ReadableSpan]) -> None:
            # The real OTLP/HTTP exporter, with room for its retries (it backs off on 503).
            results.append(exporter(server, "http", timeout=60).export(spans))

        with HeldPeak(pid) as held, ThreadPoolExecutor(len(batches)) as pool:
            list(pool.map(send, batches))
        print(f"\npeak held {held.bytes / MIB:.0f} MiB, resident {_resident_mib(pid, 'VmHWM'):.0f} MiB")
        assert results == [SpanExportResult.SUCCESS] * len(batches)
        assert server.stop() == 0
        oom_kills = cgroup.oom_kills() if isinstance(cgroup, MemoryCgroup) else 0
    assert oom_kills == 0, f"the kernel OOM-killed {oom_kills} process(es) in a {budget_mb} MB memory cgroup"
    if not in_cgroup:
        # What the budget bounds is what a pod must hold: the server's own memory and the library pages
        # it uses (its resident set also counts ~80 MiB of pages read once at import, which the kernel
        # drops first at a container's limit: docs/reliability.md).
        assert held.bytes < budget_mb * MB, f"peak held {held.bytes / MIB:.0f} MiB over {budget_mb} MB"
    sent = sorted(hex_span(s) for batch in batches for s in batch)
    stored = sorted(row[0] for row in server.query("SELECT span_id FROM spans"))
    assert stored == sent


def test_readyz_says_not_ready_while_memory_refuses_everything(
    tmp_path: Path, started: list[ServeProcess]
) -> None:
    # A 240 MB budget: refusals above ~206 MiB held, over 100 MiB above an idle server (~90: its own
    # memory and 32 MiB of library pages). A client sends 150 MB of a body and stalls: the server holds
    # it, passes the mark, and refuses every request; readiness must say so. When the client leaves,
    # what it sent is freed and readiness comes back.
    server = ServeProcess(
        tmp_path / "ready.duckdb",
        extra_args=("--memory-limit", "240MB", "--decode-workers", "0", "--max-request-mib", "200"),
    )
    started.append(server.start())
    _wait_ready(server)
    client = socket.create_connection(("127.0.0.1", server.http_port), timeout=30)
    try:
        client.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
            + f"Content-Length: {160 * MB}\r\n\r\n".encode()
        )
        client.sendall(b"\x0a" * (150 * MB))
        answer = _await_readyz(server, 503)
        assert "memory budget nearly spent" in answer["reason"], answer
        refused = post_http(server.http_port, b"")
        assert refused.kind == "retryable" and "memory budget" in refused.message, refused
    finally:
        client.close()
    answer = _await_readyz(server, 200, timeout_s=15)
    assert answer == {"ready": True}


def _await_readyz(server: ServeProcess, wanted: int, timeout_s: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    status, answer = 0, {}
    while time.monotonic() < deadline:
        status, answer = get_json(server.http_port, "/readyz")
        if status == wanted:
            return answer  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"/readyz answered {status} {answer}, not {wanted}, for {timeout_s} s")


def _closed_within(connection: socket.socket, timeout_s: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started = time.monotonic()
    connection.settimeout(timeout_s)
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except TimeoutError:
        raise AssertionError(f"the connection was still open after {timeout_s} s") from None
    return received, time.monotonic() - started


def test_idle_and_slow_connections_are_closed_after_the_timeouts(
    tmp_path: Path, started: list[ServeProcess]
) -> None:
    server = ServeProcess(
        tmp_path / "slow.duckdb",
        extra_args=("--http-header-timeout-seconds", "1", "--http-body-timeout-seconds", "1"),
    )
    started.append(server.start())
    _wait_ready(server)
    address = ("127.0.0.1", server.http_port)
    with socket.create_connection(address) as idle:  # connects and sends nothing
        _, took = _closed_within(idle, 5)
        assert took < 3
    with socket.create_connection(address) as slow_head:  # headers trickling in
        stop = threading.Event()

        def trickle() -> None:
            for byte in b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n":
                if stop.wait(0.2):
                    return
                try:
                    slow_head.send(bytes([byte]))
                except OSError:
                    return

        threading.Thread(target=trickle, daemon=True).start()
        try:
            _, took = _closed_within(slow_head, 5)
        finally:
            stop.set()
        assert took < 3
    with socket.create_connection(address) as slow_body:  # a head, then part of the body, then nothing
        slow_body.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 1000\r\n\r\n" + b"\x0a" * 10
        )
        answer, took = _closed_within(slow_body, 5)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert took < 3
    # A keep-alive connection is closed once idle for the header timeout after its answer.
    with socket.create_connection(address) as kept:
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer, took = _closed_within(kept, 5)
        assert answer.startswith(b"HTTP/1.1 200") and 0.5 < took < 3, (answer[:100], took)
    # The server is as healthy as before.
    assert get_json(server.http_port, "/healthz")[0] == 200


def _intake_bytes(server: ServeProcess) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("tracescore_intake_bytes "):
                return float(line.split()[1])
    raise AssertionError("no tracescore_intake_bytes in /metrics")


def _raw_exchange(port: int, head: bytes, body: bytes, *, close_after_send: bool = False) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(head + body)
        if close_after_send:
            return b""
        answer = b""
        while b"\r\n\r\n" not in answer and (chunk := connection.recv(65536)):
            answer += chunk
        return answer


def test_a_requests_bytes_are_counted_before_its_body_and_given_back_on_every_path(
    tmp_path: Path, started: list[ServeProcess]
) -> None:
    server = ServeProcess(
        tmp_path / "paths.duckdb",
        extra_args=("--max-request-mib", "1", "--http-body-timeout-seconds", "1", "--decode-workers", "0"),
    )
    started.append(server.start())
    _wait_ready(server)
    port = server.http_port
    head = b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
    good, _ = request(["counted"])

    # Counted from before the body is read: 8 times what it announces, while its body has not come.
    with socket.create_connection(("127.0.0.1", port)) as stalled:
        stalled.sendall(head + b"Content-Length: 100000\r\n\r\n" + b"\x0a" * 10)
        deadline = time.monotonic() + 5
        while _intake_bytes(server) != 800_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _intake_bytes(server) == 800_000
        answer, _ = _closed_within(stalled, 5)  # the body timeout: 408
        assert answer.startswith(b"HTTP/1.1 408")
    assert post_http(port, good).code == "200"  # success
    assert post_http(port, b"\xff" * 1000).code == "400"  # undecodable
    chunked = head + b"Transfer-Encoding: chunked\r\n\r\n"
    over = f"{2 * MIB:x}\r\n".encode() + b"\x0a" * (2 * MIB) + b"\r\n0\r\n\r\n"
    assert _raw_exchange(port, chunked, over).startswith(b"HTTP/1.1 413")  # counted as read, then too large
    bomb = gzip.compress(b"\x0a" * (4 * MIB))
    gzipped = head + f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n\r\n".encode()
    assert _raw_exchange(port, gzipped, bomb).startswith(b"HTTP/1.1 413")  # inflated past the limit
    _raw_exchange(port, head + b"Content-Length: 500000\r\n\r\n", b"\x0a" * 1000, close_after_send=True)
    assert _grpc_garbage(server.grpc_endpoint, b"\xff" * 1000) == grpc.StatusCode.INVALID_ARGUMENT
    deadline = time.monotonic() + 5  # the client that left is noticed as its connection closes
    while _intake_bytes(server) != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _intake_bytes(server) == 0

"""Promise 6, clean shutdown, under load.

Senders over HTTP and gRPC keep exporting agent traces (each span named) while the server gets
SIGTERM. Readiness flips at once; new requests get retryable refusals (503 + Retry-After, UNAVAILABLE +
RetryInfo) while the queue drains, every open run is completed and scored (one of them by a scorer that
takes 1.5 s: in-flight scoring is finished, not dropped), and the database is checkpointed; the process
exits 0 within a bound. Then: every acknowledged span is stored exactly once, no refused span is stored.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests._raw import START_NS, Answer, GrpcSender, get_json, post_http
from tests._server import ServeProcess

EXIT_BOUND_S = 20.0
SPECS = """
name: uses-lookup
expected_tools: [lookup]
---
name: slow
select: {task: shutdown:slow}
expected_tools: [lookup]
"""


def _attrs(values: dict[str, str]) -> list[KeyValue]:
    return [KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in values.items()]


def agent_trace(prefix: str, task: str = "shutdown:load") -> tuple[bytes, list[str]]:
    """One agent run (root + one tool span) in one request; span names carry the prefix."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    scope.scope.name = "tests.shutdown"
    trace_id, root_id = os.urandom(16), os.urandom(8)
    root = Span(trace_id=trace_id, span_id=root_id, name=f"{prefix}-agent", start_time_unix_nano=START_NS)
    root.end_time_unix_nano = START_NS + 2_000
    root.attributes.extend(
        _attrs(
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop", "tracescore.task.id": task}
        )
    )
    tool = Span(trace_id=trace_id, span_id=os.urandom(8), parent_span_id=root_id, name=f"{prefix}-tool")
    tool.start_time_unix_nano, tool.end_time_unix_nano = START_NS, START_NS + 1_000
    tool.attributes.extend(_attrs({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}))
    scope.spans.extend([root, tool])
    return bytes(request.SerializeToString()), [root.name, tool.name]


@dataclass
class Book:
    """Each request's spans, by the answer it got."""

    spans: dict[str, list[str]] = field(
        default_factory=lambda: {"ok": [], "retryable": [], "refused": [], "no answer": []}
    )
    after_sigterm: list[Answer] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self, answer: Answer, names: list[str], signalled: bool) -> None:
        with self.lock:
            self.spans[answer.kind].extend(names)
            if signalled:
                self.after_sigterm.append(answer)


def test_sigterm_under_load_drains_scores_checkpoints_and_exits_zero(tmp_path: Path) -> None:
    (tmp_path / "specs.yaml").write_text(SPECS)
    server = ServeProcess(
        tmp_path / "s.duckdb",
        extra_args=(
            "--grace-seconds", "600",  # runs stay open: the stop itself must complete and score them
            "--specs", str(tmp_path / "specs.yaml"),
            "--plugin", "tests.plugins_for_tests",
        ),
    ).start()  # fmt: skip
    assert server.process is not None
    book = Book()
    signalled = threading.Event()
    gone = threading.Event()
    readiness: list[tuple[bool, int, str]] = []

    def send(protocol: str, worker: int) -> None:
        grpc_sender = GrpcSender(server.grpc_endpoint) if protocol == "grpc" else None
        misses = 0
        for n in range(100_000):
            body, names = agent_trace(f"{protocol}{worker}-{n}")
            was_signalled = signalled.is_set()
            if grpc_sender is not None:
                answer = grpc_sender.send(body, timeout_s=30)
            else:
                answer = post_http(server.http_port, body, timeout_s=30)
            book.enter(answer, names, was_signalled)
            misses = misses + 1 if answer.kind == "no answer" else 0
            if misses >= 3 or gone.is_set():
                break
            time.sleep(0.005)
        if grpc_sender is not None:
            grpc_sender.close()

    def watch_readiness() -> None:
        while not gone.is_set():
            try:
                status, body = get_json(server.http_port, "/readyz", timeout_s=2)
            except OSError:
                status, body = 0, None
            readiness.append((signalled.is_set(), status, str((body or {}).get("reason", ""))))
            time.sleep(0.05)

    senders = [threading.Thread(target=send, args=(p, w)) for p in ("http", "grpc") for w in range(2)]
    watcher = threading.Thread(target=watch_readiness)
    for thread in [*senders, watcher]:
        thread.start()
    try:
        slow_body, slow_names = agent_trace("slow", task="shutdown:slow")
        assert post_http(server.http_port, slow_body).kind == "ok"
        book.enter(Answer("ok", "200"), slow_names, False)
        time.sleep(1.5)
        sent_at = time.monotonic()
        signalled.set()
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(60)
        took = time.monotonic() - sent_at
    finally:
        gone.set()
        for thread in [*senders, watcher]:
            thread.join(60)
        server.kill()
    assert code == 0, server.log()[-3000:]
    assert took < EXIT_BOUND_S, f"took {took:.1f} s to stop"

    kinds = Counter(a.kind for a in book.after_sigterm)
    print(
        f"\nshutdown under load: exit 0 after {took:.1f} s; answers before/after SIGTERM: "
        f"ok {len(book.spans['ok']) // 2}, retryable {len(book.spans['retryable']) // 2}, "
        f"no answer {len(book.spans['no answer']) // 2}; after SIGTERM {dict(kinds)}"
    )
    # Readiness failed while the server was still answering, and said why.
    assert any(s and status == 503 and "shutting down" in reason for s, status, reason in readiness), (
        readiness
    )
    # New work was refused with retryable answers that carry a back-off, never a final refusal.
    assert not book.spans["refused"], book.spans["refused"][:10]
    refusals = [a for a in book.after_sigterm if a.kind == "retryable"]
    assert refusals and all(a.retry_after for a in refusals), book.after_sigterm[:10]
    assert {a.code for a in refusals} <= {"503", "UNAVAILABLE"}

    stored = dict(server.query("SELECT name, count(*) FROM spans GROUP BY name"))
    assert all(count == 1 for count in stored.values())
    lost = [name for name in book.spans["ok"] if name not in stored]
    assert not lost, f"acknowledged but not stored: {lost[:10]}"
    refused_but_stored = [name for name in book.spans["retryable"] if name in stored]
    assert not refused_but_stored, f"refused but stored: {refused_but_stored[:10]}"
    assert not [name for name in book.spans["no answer"] if name in stored], "stored without an answer"

    # Every acknowledged run was completed and scored, the slow one included.
    runs = len(book.spans["ok"]) // 2
    assert server.query("SELECT count(*) FROM run_traces WHERE status = 'complete'") == [(runs,)]
    assert server.query("SELECT count(*) FROM verdicts WHERE spec = 'uses-lookup'") == [(runs,)]
    assert server.query("SELECT label, count(*) FROM verdicts GROUP BY ALL ORDER BY ALL") == [
        ("pass", runs + 1)
    ]
    # Checkpointed: nothing is left to replay.
    wal = Path(f"{server.db}.wal")
    assert not wal.exists() or wal.stat().st_size == 0

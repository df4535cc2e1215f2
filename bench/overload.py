"""Overload: several times the sustainable rate from concurrent real OTLP exporters, for a bounded time.

`make soak` (or `python -m bench.overload`) runs it at full size; tests/collector/receive/test_overload.py
runs it small.
Everything goes to loopback, from a bounded number of processes, for a bounded time.

- gRPC senders (processes × threads): the real OTLP/gRPC exporter (its channel, its 6 attempts, its
  handling of UNAVAILABLE and RetryInfo), sending requests built ahead of time: `_translate_data`
  returns the prepared request. Encoding spans in Python would otherwise cap what they can offer below
  what the server sustains on the same cores.
- one HTTP sender: the real SDK path (spans from a tracer, BatchSpanProcessor, the OTLP/HTTP exporter
  honouring 503 + Retry-After).
- probes, every 0.5 s: one raw gRPC and one raw HTTP request, so the exact form of each refusal is
  checked (UNAVAILABLE + RetryInfo, 503 + Retry-After); a refused probe is not retried and must not be
  stored.
- the server's RSS is sampled, and /healthz is asked every 0.25 s.

After the load stops, senders finish their retries, the server is stopped with SIGTERM, and the database
is compared with what every sender was told, span by span (names are unique). Every figure is reported.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb

ROOT = Path(__file__).resolve().parent.parent
START_NS = 1_700_000_000_000_000_000
SPANS_PER_TRACE = 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ---- senders (each in its own process) ---------------------------------------------------------------


def _grpc_sender(
    endpoint: str, name: str, threads: int, seconds: float, batch: int, padding: int, app_rate: float
) -> dict[str, Any]:
    import grpc
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span
    from opentelemetry.sdk.trace.export import SpanExportResult

    queue_spans = 2048  # BatchSpanProcessor's default max_queue_size
    lock = threading.Lock()
    attempts: Counter[str] = Counter()

    class PreparedExporter(OTLPSpanExporter):
        def _translate_data(self, data: Any) -> Any:
            return data

        def _count_data(self, data: Any) -> int:
            return batch

        def _initialize_channel_and_stub(self) -> None:
            """Counts every attempt's outcome (the exporter's log cannot: it drops repeated messages)."""
            super()._initialize_channel_and_stub()  # type: ignore[no-untyped-call]
            client: Any = self._client  # the gRPC stub, None only before this call
            send = client.Export

            def counted(*args: Any, **kwargs: Any) -> Any:
                try:
                    response = send(*args, **kwargs)
                except grpc.RpcError as error:
                    with lock:
                        attempts[error.code().name] += 1
                    raise
                with lock:
                    attempts["OK"] += 1
                return response

            client.Export = counted

    template = ExportTraceServiceRequest()
    resource = template.resource_spans.add()
    resource.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value="overload")))
    scope = resource.scope_spans.add()
    scope.scope.name = "bench.overload"
    for i in range(batch):
        span = scope.spans.add()
        span.kind = Span.SPAN_KIND_INTERNAL
        span.start_time_unix_nano, span.end_time_unix_nano = START_NS + i, START_NS + i + 1_000
        if padding:
            span.attributes.append(KeyValue(key="padding", value=AnyValue(string_value="x" * padding)))

    def prepared(key: str) -> Any:
        request = ExportTraceServiceRequest()
        request.CopyFrom(template)
        trace_id, root = b"", b""
        for i, span in enumerate(request.resource_spans[0].scope_spans[0].spans):
            if i % SPANS_PER_TRACE == 0:  # agent-sized traces: each completes as a run
                trace_id, root = os.urandom(16), os.urandom(8)
                span.span_id = root
            else:
                span.span_id = os.urandom(8)
                span.parent_span_id = root
            span.trace_id = trace_id
            span.name = f"{key}.{i}"
        return request

    acked: list[str] = []
    gave_up: list[str] = []
    dropped = [0]
    started = time.monotonic()
    deadline = started + seconds

    def work(thread: int) -> None:
        """One application: it makes `app_rate` spans a second into an SDK-sized queue (batches beyond
        `queue_spans` are dropped there, as BatchSpanProcessor drops them) while its exporter sends
        one batch at a time; after the load it empties its queue."""
        exporter = PreparedExporter(endpoint=endpoint, insecure=True, timeout=60)
        made = sent = lost = 0
        while True:
            elapsed = min(time.monotonic(), deadline) - started
            due = int(elapsed * app_rate / batch) + 1 - made
            made += due
            queued = made - sent - lost
            if queued * batch > queue_spans:
                lost += queued - queue_spans // batch
            if made - sent - lost == 0:
                if time.monotonic() >= deadline:
                    break
                time.sleep(min(0.05, batch / app_rate))
                continue
            key = f"{name}t{thread}b{sent + lost}"
            result = exporter.export(prepared(key))
            sent += 1
            with lock:
                (acked if result is SpanExportResult.SUCCESS else gave_up).append(key)
        with lock:
            dropped[0] += lost * batch
        exporter.shutdown()

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return {
        "acked_batches": acked,
        "gave_up_batches": gave_up,
        "batch": batch,
        "dropped_in_sdk_queue": dropped[0],
        "attempts": dict(attempts),
    }


def _http_sender(url: str, name: str, seconds: float, rate: float) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    acked: list[str] = []
    gave_up: list[str] = []
    handed: list[str] = []

    class Recording(SpanExporter):
        def __init__(self) -> None:
            self.inner = OTLPSpanExporter(endpoint=url, timeout=60)

        def export(self, spans: Any) -> SpanExportResult:
            names = [s.name for s in spans if isinstance(s, ReadableSpan)]
            handed.extend(names)
            result = self.inner.export(spans)
            (acked if result is SpanExportResult.SUCCESS else gave_up).extend(names)
            return result

        def shutdown(self) -> None:
            self.inner.shutdown()  # type: ignore[no-untyped-call]

    provider = TracerProvider(resource=Resource.create({"service.name": "overload-http"}))
    provider.add_span_processor(
        BatchSpanProcessor(Recording(), max_queue_size=1_000_000, max_export_batch_size=512)
    )
    tracer = provider.get_tracer("bench.overload")
    generated = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        with tracer.start_as_current_span(f"{name}.{generated}"):
            for k in range(1, SPANS_PER_TRACE):
                with tracer.start_as_current_span(f"{name}.{generated + k}"):
                    pass
        generated += SPANS_PER_TRACE
        ahead = generated / rate - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
    provider.force_flush(300_000)
    provider.shutdown()
    return {"generated": generated, "handed": len(handed), "acked": acked, "gave_up": gave_up}


def sender_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol", choices=("grpc", "http"))
    parser.add_argument("--target")
    parser.add_argument("--name")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--padding", type=int, default=0)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    # A sender that has not finished long after the load ends prints every thread's stack and exits.
    faulthandler.dump_traceback_later(args.seconds + 300, exit=True)
    logging.basicConfig(level=logging.CRITICAL)  # exporters warn at each refusal: counted, not printed
    if args.protocol == "grpc":
        result = _grpc_sender(
            args.target, args.name, args.threads, args.seconds, args.batch, args.padding, args.rate
        )
    else:
        result = _http_sender(args.target, args.name, args.seconds, args.rate)
    args.out.write_text(json.dumps(result))  # a file: a pipe would fill and block the sender
    sys.stdout.flush()
    os._exit(0)  # without waiting for the exporters' channels


# ---- the run ---------------------------------------------------------------------------------------


def _rss_mb(pid: int, field: str = "VmRSS:") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


def _metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith((name + " ", name + "{")):
                return float(line.rsplit(" ", 1)[1])
    return float("nan")


class _Probes:
    """Raw requests on the side: the exact form of every refusal, and responsiveness."""

    def __init__(self, grpc_port: int, http_port: int) -> None:
        sys.path.insert(0, str(ROOT))
        from tests._raw import GrpcSender, post_http, request

        self._request, self._post = request, post_http
        self._grpc = GrpcSender(f"127.0.0.1:{grpc_port}")
        self._http_port = http_port
        self.answers: list[dict[str, Any]] = []
        self.health: list[float] = []
        self.health_failures = 0
        self._n = 0

    def probe(self) -> None:
        for protocol in ("grpc", "http"):
            body, names = self._request([f"probe{self._n}.{i}" for i in range(10)])
            self._n += 1
            if protocol == "grpc":
                answer = self._grpc.send(body, timeout_s=30)
            else:
                answer = self._post(self._http_port, body, timeout_s=30)
            self.answers.append(
                {
                    "protocol": protocol,
                    "kind": answer.kind,
                    "code": answer.code,
                    "retry_after": answer.retry_after,
                    "names": names,
                }
            )

    def healthz(self) -> None:
        started = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self._http_port}/healthz", timeout=5) as response:
                response.read()
            self.health.append(time.monotonic() - started)
        except OSError:
            self.health_failures += 1

    def close(self) -> None:
        self._grpc.close()


def _sender(
    work: Path, name: str, protocol: str, target: str, seconds: float, rate: float, *more: str
) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "bench.overload", "--sender", "--protocol", protocol, "--target", target]
    argv += ["--name", name, "--seconds", str(seconds), "--rate", str(rate)]
    argv += ["--out", str(work / f"{name}.json"), *more]
    return subprocess.Popen(argv, cwd=ROOT)


def run(
    *,
    seconds: float = 60.0,
    grpc_senders: int = 3,
    threads: int = 32,
    batch: int = 512,
    app_rate: float = 512.0,
    padding: int = 200,
    http_rate: float = 2000.0,
    max_backlog_spans: int = 2000,
    memory_limit: str = "1GB",
    workdir: Path | None = None,
) -> dict[str, Any]:
    """One overload run; returns every figure (see the module docstring)."""
    owned = tempfile.TemporaryDirectory() if workdir is None else None
    work = Path(owned.name) if owned else workdir
    assert work is not None
    db = work / "overload.duckdb"
    grpc_port, http_port = _free_port(), _free_port()
    log = (work / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "collector.cli", "serve", "--db", str(db)]
        + ["--grpc", f"127.0.0.1:{grpc_port}", "--http", f"127.0.0.1:{http_port}"]
        + ["--max-backlog-spans", str(max_backlog_spans), "--retry-after-seconds", "1"]
        + (["--memory-limit", memory_limit] if memory_limit else []),
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not (_listening(grpc_port) and _listening(http_port)):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve did not start: {(work / 'serve.log').read_text()}")
            time.sleep(0.05)
        idle_rss = _rss_mb(server.pid)
        grpc_options = ("--threads", str(threads), "--batch", str(batch), "--padding", str(padding))
        senders = [
            _sender(work, f"g{k}", "grpc", f"127.0.0.1:{grpc_port}", seconds, app_rate, *grpc_options)
            for k in range(grpc_senders)
        ]
        senders.append(
            _sender(work, "h0", "http", f"http://127.0.0.1:{http_port}/v1/traces", seconds, http_rate)
        )
        probes = _Probes(grpc_port, http_port)
        rss: list[float] = []
        started = time.monotonic()
        next_probe = started
        while any(s.poll() is None for s in senders):
            now = time.monotonic()
            rss.append(_rss_mb(server.pid))
            probes.healthz()
            if now >= next_probe and now - started < seconds:
                probes.probe()
                next_probe = now + 0.5
            time.sleep(0.25)
            if now - started > seconds + 600:
                raise RuntimeError("senders did not finish within 10 minutes of the load's end")
        drained_after = time.monotonic() - started - seconds
        probes.close()
        results = [json.loads(path.read_text()) for path in sorted(work.glob("[gh]*.json"))]
        refused = _metric(http_port, "tracescore_requests_refused_total")
        accepted = _metric(http_port, "tracescore_spans_stored_total")
        peak_rss = _rss_mb(server.pid, "VmHWM:")
        server.send_signal(signal.SIGTERM)
        exit_code = server.wait(120)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
        log.close()

    with duckdb.connect(str(db), read_only=True) as connection:
        stored_total, distinct = connection.execute(
            "SELECT count(*), count(DISTINCT name) FROM spans"
        ).fetchone()  # type: ignore[misc]
        batches = dict(
            connection.execute(
                "SELECT regexp_replace(name, '\\.[0-9]+$', '') AS b, count(*) FROM spans "
                "WHERE name LIKE 'g%' GROUP BY b"
            ).fetchall()
        )
        http_stored = {
            r[0] for r in connection.execute("SELECT name FROM spans WHERE name LIKE 'h%'").fetchall()
        }
        probes_stored = {
            r[0] for r in connection.execute("SELECT name FROM spans WHERE name LIKE 'probe%'").fetchall()
        }
    if owned:
        owned.cleanup()

    grpc_results = [r for r in results if "acked_batches" in r]
    http_result = next(r for r in results if "generated" in r)
    acked_batches = {b for r in grpc_results for b in r["acked_batches"]}
    gave_up_batches = {b for r in grpc_results for b in r["gave_up_batches"]}
    probe_ok = {n for a in probes.answers if a["kind"] == "ok" for n in a["names"]}
    probe_refused = {n for a in probes.answers if a["kind"] != "ok" for n in a["names"]}
    grpc_sent = (len(acked_batches) + len(gave_up_batches)) * batch
    http_sent = http_result["generated"]
    dropped_in_sdk = sum(r["dropped_in_sdk_queue"] for r in grpc_results)
    load_s = seconds + max(drained_after, 0)
    figures: dict[str, Any] = {
        "seconds": seconds,
        "grpc_exporters": grpc_senders * threads,
        "app_spans_per_s_each": app_rate,
        "batch_spans": batch,
        "max_backlog_spans": max_backlog_spans,
        "memory_limit": memory_limit,
        "spans_sent": grpc_sent + http_sent + len(probe_ok),
        "spans_stored": stored_total,
        "spans_stored_distinct": distinct,
        "grpc": {
            "batches_acked": len(acked_batches),
            "batches_given_up_by_sdk": len(gave_up_batches),
            "batches_stored_whole": sum(1 for b in acked_batches if batches.get(b) == batch),
            "batches_stored_not_acked": sorted(set(batches) - acked_batches)[:20],
            "attempts_by_outcome": dict(sum((Counter(r["attempts"]) for r in grpc_results), Counter())),
        },
        "http": {
            "spans_generated": http_sent,
            "spans_handed_to_exporter": http_result["handed"],
            "spans_acked": len(http_result["acked"]),
            "spans_given_up_by_sdk": len(http_result["gave_up"]),
            "spans_acked_not_stored": len(set(http_result["acked"]) - http_stored),
        },
        "probes": {
            "answers": {
                f"{a['protocol']} {a['kind']} {a['code']}": sum(
                    1
                    for b in probes.answers
                    if (b["protocol"], b["kind"], b["code"]) == (a["protocol"], a["kind"], a["code"])
                )
                for a in probes.answers
            },
            "refusals_without_backoff": sum(
                1 for a in probes.answers if a["kind"] == "retryable" and not a["retry_after"]
            ),
            "refused_but_stored": len(probe_refused & probes_stored),
            "acked_not_stored": len(probe_ok - probes_stored),
        },
        "spans_dropped_in_sdk_queues": dropped_in_sdk,
        "requests_refused_by_server": refused,
        "spans_committed_by_server": accepted,
        "committed_spans_per_s": accepted / load_s,
        "offered_spans_per_s": (grpc_sent + dropped_in_sdk + http_sent) / seconds,
        "rss_mb": {
            "idle": idle_rss,
            "peak": peak_rss,
            "p50_under_load": _percentile(rss, 0.5),
            "max_sampled": max(rss),
        },
        "healthz": {
            "answered": len(probes.health),
            "failed": probes.health_failures,
            "p50_s": _percentile(probes.health, 0.5),
            "max_s": max(probes.health) if probes.health else float("nan"),
        },
        "drain_after_load_s": drained_after,
        "exit_code": exit_code,
    }
    figures["overload_factor"] = figures["offered_spans_per_s"] / max(figures["committed_spans_per_s"], 1)
    missing_grpc = sum(batch - batches.get(b, 0) for b in acked_batches)
    figures["lost_acknowledged_spans"] = (
        missing_grpc + figures["http"]["spans_acked_not_stored"] + figures["probes"]["acked_not_stored"]
    )
    figures["sent_equals_stored"] = figures["spans_sent"] == stored_total == distinct
    return figures


def main() -> None:
    if "--sender" in sys.argv:
        sender_main([a for a in sys.argv[1:] if a != "--sender"])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--senders", type=int, default=3, help="gRPC sender processes")
    parser.add_argument("--threads", type=int, default=32, help="exporters per gRPC sender process")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--rate", type=float, default=512, help="spans/s each exporter's application makes")
    parser.add_argument("--max-backlog-spans", type=int, default=2000)
    parser.add_argument("--memory-limit", default="1GB", help="the server budget (DuckDB gets 40 %%)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "overload.json")
    args = parser.parse_args()
    figures = run(
        seconds=args.seconds,
        grpc_senders=args.senders,
        threads=args.threads,
        batch=args.batch,
        app_rate=args.rate,
        max_backlog_spans=args.max_backlog_spans,
        memory_limit=args.memory_limit,
    )
    text = json.dumps(figures, indent=2)
    print(text)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

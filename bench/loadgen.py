"""Load generator: sends the seeded workload over real OTLP (gRPC or HTTP protobuf) from several
concurrent connections, optionally paced, and reports ack latencies (and verdict lag when watching).

Run by bench/run.py in its own process (pinned to core 1); prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.request
from collections.abc import Callable

import grpc

from bench.workload import build

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _grpc_sender(target: str) -> Callable[[bytes], None]:
    channel = grpc.insecure_channel(target, options=[("grpc.max_send_message_length", 64 << 20)])
    call = channel.unary_unary(EXPORT, request_serializer=lambda b: b, response_deserializer=lambda b: b)

    def send(body: bytes) -> None:
        for attempt in range(50):
            try:
                call(body, timeout=60)
                return
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE:  # back-pressure: retry, as exporters do
                    raise
                time.sleep(min(0.05 * (attempt + 1), 1.0))
        raise RuntimeError("gave up after 50 retryable refusals")

    return send


def _http_sender(url: str) -> Callable[[bytes], None]:
    def send(body: bytes) -> None:
        for attempt in range(50):
            request = urllib.request.Request(url, body, {"Content-Type": "application/x-protobuf"})
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    response.read()
                return
            except urllib.error.HTTPError as exc:
                if exc.code not in (429, 503):
                    raise
                time.sleep(min(0.05 * (attempt + 1), 1.0))
        raise RuntimeError("gave up after 50 retryable refusals")

    return send


def _watch(url: str, arrivals: dict[str, float], wall: dict[str, float], stop: threading.Event) -> None:
    """Each run's first verdict: when it arrived (monotonic, and Unix time to compare with the server's
    completion and storing times, which the database file keeps)."""
    with urllib.request.urlopen(url, timeout=600) as response:
        for line in response:
            if line.strip():
                trace_id = json.loads(line)["trace_id"]
                if trace_id not in arrivals:
                    arrivals[trace_id] = time.monotonic()
                    wall[trace_id] = time.time()
            if stop.is_set():
                return


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grpc")
    parser.add_argument("--http")
    parser.add_argument("--traces", type=int, required=True)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--spans-per-second", type=float, default=0.0, help="0: as fast as acks allow")
    parser.add_argument("--watch", help="verdict watch URL: measure verdict lag per run")
    parser.add_argument("--watch-wait", type=float, default=15.0)
    args = parser.parse_args()

    workload = build(args.traces, args.seed)
    send = _grpc_sender(args.grpc) if args.grpc else _http_sender(args.http)
    interval = 512 / args.spans_per_second if args.spans_per_second else 0.0
    latencies = [0.0] * len(workload.requests)
    sent_at = [0.0] * len(workload.requests)
    acked_at = [0.0] * len(workload.requests)
    arrivals: dict[str, float] = {}
    arrivals_wall: dict[str, float] = {}
    stop = threading.Event()
    if args.watch:
        threading.Thread(target=_watch, args=(args.watch, arrivals, arrivals_wall, stop), daemon=True).start()
        time.sleep(0.5)
    next_index = 0
    lock = threading.Lock()
    started = time.monotonic()

    def worker() -> None:
        nonlocal next_index
        while True:
            with lock:
                index = next_index
                next_index += 1
            if index >= len(workload.requests):
                return
            if interval:
                due = started + index * interval
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            sent_at[index] = time.monotonic()
            send(workload.requests[index])
            acked_at[index] = time.monotonic()
            latencies[index] = acked_at[index] - sent_at[index]

    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    result: dict[str, object] = {
        "requests": len(workload.requests),
        "spans": workload.spans,
        "tool_spans": workload.tool_spans,
        "elapsed_s": elapsed,
        "spans_per_s": workload.spans / elapsed,
        "latencies_s": latencies,
    }
    if args.watch:
        deadline = time.monotonic() + args.watch_wait
        while len(arrivals) < workload.traces and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        # From the moment the request carrying the run's last span (its root) was sent, as the target
        # is stated; from its acknowledgement too, which leaves out the time the request waited.
        roots = workload.root_of_trace
        seen = [(arrivals[tid.hex()], index) for tid, index in roots if tid.hex() in arrivals]
        result["verdicts"] = len(arrivals)
        result["verdict_lag_s"] = [at - sent_at[index] for at, index in seen]
        result["verdict_lag_from_ack_s"] = [at - acked_at[index] for at, index in seen]
        result["verdict_arrived_unix"] = dict(arrivals_wall)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

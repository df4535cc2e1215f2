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

from bench.stats import summary
from bench.workload import SPANS_PER_REQUEST, build, cycled, cycled_id

# 256 runs of 6 spans fill exactly 3 requests of 512.
RUNS_PER_WHOLE_REQUESTS = 256
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
RETRIES = 50


class GaveUp(RuntimeError):
    """An exporter refused `retries` times in a row on one request: it drops the request (unsent,
    never counted as acknowledged) and stops, as an OTLP exporter whose retries ran out drops its batch."""

    def __init__(self, retries: int) -> None:
        super().__init__(f"gave up after {retries} retryable refusals")


class Refusals:
    """Retryable refusals (back-pressure) seen by every exporter of the run."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.count += 1


def _grpc_sender(target: str, refusals: Refusals, retries: int) -> Callable[[bytes], None]:
    channel = grpc.insecure_channel(target, options=[("grpc.max_send_message_length", 64 << 20)])
    call = channel.unary_unary(EXPORT, request_serializer=lambda b: b, response_deserializer=lambda b: b)

    def send(body: bytes) -> None:
        for attempt in range(retries):
            try:
                call(body, timeout=60)
                return
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE:  # back-pressure: retry, as exporters do
                    raise
                refusals.add()
                time.sleep(min(0.05 * (attempt + 1), 1.0))
        raise GaveUp(retries)

    return send


def _http_sender(url: str, refusals: Refusals, retries: int) -> Callable[[bytes], None]:
    def send(body: bytes) -> None:
        for attempt in range(retries):
            request = urllib.request.Request(url, body, {"Content-Type": "application/x-protobuf"})
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    response.read()
                return
            except urllib.error.HTTPError as exc:
                if exc.code not in (429, 503):
                    raise
                refusals.add()
                time.sleep(min(0.05 * (attempt + 1), 1.0))
        raise GaveUp(retries)

    return send


def _watch(url: str, arrivals: dict[str, float], stop: threading.Event) -> None:
    with urllib.request.urlopen(url, timeout=600) as response:
        for line in response:
            if line.strip():
                arrivals.setdefault(json.loads(line)["trace_id"], time.monotonic())
            if stop.is_set():
                return


class Requests:
    """The requests of one run, by index: the built workload, then (for a run of `--seconds`) the same
    workload again as new runs (bench.workload.cycled) until the run has its share of spans."""

    def __init__(self, traces: int, seed: int, total_spans: int | None) -> None:
        if total_spans is not None:  # whole requests of whole runs, so every repetition is alike
            traces = -(-traces // RUNS_PER_WHOLE_REQUESTS) * RUNS_PER_WHOLE_REQUESTS
        self.workload = build(traces, seed)
        base = len(self.workload.requests)
        self.count = base if total_spans is None else -(-total_spans // SPANS_PER_REQUEST)
        self._last_spans = self.workload.spans - SPANS_PER_REQUEST * (base - 1)
        self._shift_ns = traces * 1_000_000_000  # the workload's runs start a second apart
        self._roots: list[list[bytes]] = [[] for _ in range(base)]
        for trace_id, index in self.workload.root_of_trace:
            self._roots[index].append(trace_id)

    def spans(self, index: int) -> int:
        last = index % len(self.workload.requests) == len(self.workload.requests) - 1
        return self._last_spans if last else SPANS_PER_REQUEST

    def body(self, index: int) -> bytes:
        cycle, base = divmod(index, len(self.workload.requests))
        return cycled(self.workload.requests[base], cycle, cycle * self._shift_ns)

    def roots(self, index: int) -> list[str]:
        """The runs whose root span (the last one the SDK exports) this request carries."""
        cycle, base = divmod(index, len(self.workload.requests))
        return [cycled_id(trace_id, cycle).hex() for trace_id in self._roots[base]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grpc")
    parser.add_argument("--http")
    parser.add_argument(
        "--traces", type=int, required=True, help="agent runs built (repeated as new runs for --seconds)"
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--spans-per-second", type=float, default=0.0, help="0: as fast as acks allow")
    parser.add_argument(
        "--seconds",
        type=float,
        help="offer --spans-per-second for this long (the built runs repeated as new runs); "
        "without it, send the built runs once",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        help="send nothing new after this long (default with --seconds: 1.5 x --seconds + 60), so a "
        "server slower than the offered rate ends the run with a lower achieved rate",
    )
    parser.add_argument(
        "--retries", type=int, default=RETRIES, help="retryable refusals of one request before giving up"
    )
    parser.add_argument("--watch", help="verdict watch URL: measure verdict lag per run")
    parser.add_argument("--watch-wait", type=float, default=15.0)
    args = parser.parse_args()
    if args.seconds and not args.spans_per_second:
        parser.error("--seconds needs --spans-per-second")
    total_spans = int(args.spans_per_second * args.seconds) if args.seconds else None
    requests = Requests(args.traces, args.seed, total_spans)
    max_seconds = args.max_seconds or (1.5 * args.seconds + 60 if args.seconds else None)

    refusals = Refusals()
    if args.grpc:
        send = _grpc_sender(args.grpc, refusals, args.retries)
    else:
        send = _http_sender(args.http, refusals, args.retries)
    interval = SPANS_PER_REQUEST / args.spans_per_second if args.spans_per_second else 0.0
    sent_at = [0.0] * requests.count
    acked_at = [0.0] * requests.count
    arrivals: dict[str, float] = {}
    stop = threading.Event()
    if args.watch:
        threading.Thread(target=_watch, args=(args.watch, arrivals, stop), daemon=True).start()
        time.sleep(0.5)
    next_index = 0
    lock = threading.Lock()
    started = time.monotonic()
    deadline = started + max_seconds if max_seconds else float("inf")

    failures: list[str] = []
    gave_up = 0

    def worker() -> None:
        nonlocal gave_up
        try:
            send_share()
        except Exception as exc:  # a server that keeps refusing or fails: reported, never hidden
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}")
                gave_up += isinstance(exc, GaveUp)

    def send_share() -> None:
        nonlocal next_index
        while True:
            with lock:
                index = next_index
                next_index += 1
            if index >= requests.count or time.monotonic() > deadline:
                return
            body = requests.body(index)
            if interval:
                delay = started + index * interval - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            sent_at[index] = time.monotonic()
            send(body)
            acked_at[index] = time.monotonic()

    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    done = [i for i in range(requests.count) if acked_at[i]]
    spans = sum(requests.spans(i) for i in done)
    result: dict[str, object] = {
        "requests": len(done),
        "requests_planned": requests.count,
        # Exporters that stopped on an error (each sends no more): the run is short of its plan.
        "exporters_failed": len(failures),
        "first_failure": failures[0] if failures else None,
        # Of those, the ones whose retries ran out on back-pressure (each dropped its request unsent),
        # and the retryable refusals every exporter saw, given up on or not.
        "gave_up": gave_up,
        "refusals": refusals.count,
        "spans": spans,  # acknowledged only: a request given up on or failed is not counted
        "tool_spans": spans // 2,  # three tool spans in every six (bench/workload.py)
        "elapsed_s": elapsed,
        "spans_per_s": spans / elapsed,
        # Paced: the rate at which requests went out, which falls below the offered one only when the
        # server holds them back (each exporter waits for its answer); the wait for the last answers,
        # which a short run would count against the rate, is left out.
        "sent_spans_per_s": spans / (max(sent_at[i] for i in done) - started + interval)
        if interval and done
        else (0.0 if interval else None),  # paced, nothing acknowledged: nothing sent
        "ack_ms": summary([acked_at[i] - sent_at[i] for i in done], scale=1000),
    }
    if args.watch:
        # From the moment the request carrying the run's last span (its root) was sent, as the target
        # is stated; from its acknowledgement too, which leaves out the time the request waited.
        runs = [(trace_id, i) for i in done for trace_id in requests.roots(i)]
        wait_until = time.monotonic() + args.watch_wait
        while len(arrivals) < len(runs) and time.monotonic() < wait_until:
            time.sleep(0.05)
        stop.set()
        seen = [(arrivals[trace_id], i) for trace_id, i in runs if trace_id in arrivals]
        missing = len(runs) - len(seen)
        result["runs"] = len(runs)
        result["verdicts"] = len(seen)
        result["verdict_lag_ms"] = summary([at - sent_at[i] for at, i in seen], missing, scale=1000)
        result["verdict_lag_from_ack_ms"] = summary([at - acked_at[i] for at, i in seen], missing, scale=1000)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

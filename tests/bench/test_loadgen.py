"""The sustained runs of `make bench` repeat one built workload as new runs (bench/workload.cycled): if
a repetition reused an id, the server would take its spans for more of an earlier run (a run is known
by its agent span's id) and the verdict lag would be measured on runs that never got a verdict."""

from __future__ import annotations

import tempfile
import threading
from collections import Counter
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench.loadgen import EXPORT, RUNS_PER_WHOLE_REQUESTS, Requests
from bench.run import SPEC
from bench.servers import Tracescore, loadgen
from bench.workload import SPANS_PER_REQUEST


def test_each_repetition_of_the_workload_is_new_runs_with_the_same_shape() -> None:
    requests = Requests(100, seed=5, total_spans=3 * 3 * SPANS_PER_REQUEST)  # 3 repetitions of 3 requests
    assert requests.workload.traces == RUNS_PER_WHOLE_REQUESTS
    assert requests.count == 9
    spans, roots = [], []
    for index in range(requests.count):
        request = ExportTraceServiceRequest.FromString(requests.body(index))
        batch = [s for r in request.resource_spans for scope in r.scope_spans for s in scope.spans]
        assert len(batch) == requests.spans(index) == SPANS_PER_REQUEST
        spans += batch
        agents = [s.trace_id.hex() for s in batch if s.name.startswith("invoke_agent")]
        assert requests.roots(index) == agents
        roots += agents
    assert len({(s.trace_id, s.span_id) for s in spans}) == len({s.span_id for s in spans}) == len(spans)
    assert len(set(roots)) == len(roots) == 3 * RUNS_PER_WHOLE_REQUESTS
    # Parents stay inside their trace, and every run keeps its six spans.
    ids = {(s.trace_id, s.span_id) for s in spans}
    assert all((s.trace_id, s.parent_span_id) in ids for s in spans if s.parent_span_id)
    assert set(Counter(s.trace_id for s in spans).values()) == {6}
    conversations = {
        a.value.string_value for s in spans for a in s.attributes if a.key == "gen_ai.conversation.id"
    }
    assert len(conversations) == len(roots)


def test_every_repeated_run_gets_its_own_verdict_from_a_real_server() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(SPEC)
        server = Tracescore(Path(tmp), ["--grace-seconds", "0.2", "--specs", str(spec)])
        try:
            result = loadgen(
                [
                    "--grpc",
                    f"127.0.0.1:{server.grpc}",
                    "--traces",
                    str(RUNS_PER_WHOLE_REQUESTS),
                    "--spans-per-second",
                    str(6 * SPANS_PER_REQUEST),
                    "--seconds",
                    "1",  # 6 requests: the built 3, then all of them again as new runs
                    "--watch",
                    f"http://127.0.0.1:{server.http}/api/v1/verdicts/watch",
                    "--watch-wait",
                    "60",
                ],
                timeout_s=120,
            )
        finally:
            server.stop()
        assert result["requests"] == 6
        assert result["runs"] == result["verdicts"] == 2 * RUNS_PER_WHOLE_REQUESTS
        assert result["verdict_lag_ms"]["missing"] == 0
        assert server.count("(SELECT DISTINCT run_id FROM run_traces)") == 2 * RUNS_PER_WHOLE_REQUESTS


class _Refusing:
    """A gRPC Export endpoint that answers UNAVAILABLE (back-pressure) to the first `refuse` calls of each
    request body it sees, then accepts it."""

    def __init__(self, refuse: int) -> None:
        self.refuse = refuse
        self.seen: Counter[bytes] = Counter()
        self.accepted = 0
        self._lock = threading.Lock()

    def export(self, body: bytes, context: grpc.ServicerContext) -> bytes:
        with self._lock:
            self.seen[body] += 1
            refused = self.seen[body] <= self.refuse
            self.accepted += not refused
        if refused:
            context.abort(grpc.StatusCode.UNAVAILABLE, "busy")
        return b""


def _serve(endpoint: _Refusing) -> tuple[grpc.Server, int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.unary_unary_rpc_method_handler(
        endpoint.export, request_deserializer=lambda b: b, response_serializer=lambda b: b
    )
    service, method = EXPORT.strip("/").split("/")
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(service, {method: handler})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def _send(port: int, retries: int, *paced: str) -> dict[str, Any]:
    # 256 runs: 3 requests, from 2 exporters.
    args = ["--grpc", f"127.0.0.1:{port}", "--traces", "256", "--concurrency", "2", "--retries", str(retries)]
    return loadgen([*args, *paced], timeout_s=60)


def test_exporters_that_give_up_are_counted_and_their_requests_not_counted_as_sent() -> None:
    endpoint = _Refusing(refuse=1000)
    server, port = _serve(endpoint)
    try:
        result = _send(port, retries=3)
    finally:
        server.stop(None)
    # Each exporter gave up on its first request after 3 refusals: nothing acknowledged, nothing counted.
    assert (result["gave_up"], result["exporters_failed"], result["refusals"]) == (2, 2, 6)
    assert (result["requests"], result["spans"], endpoint.accepted) == (0, 0, 0)
    assert result["first_failure"] == "GaveUp: gave up after 3 retryable refusals"


def test_a_paced_run_with_nothing_acknowledged_reports_nothing_sent() -> None:
    server, port = _serve(_Refusing(refuse=1000))
    try:
        result = _send(port, 2, "--spans-per-second", str(3 * SPANS_PER_REQUEST), "--seconds", "1")
    finally:
        server.stop(None)
    assert (result["gave_up"], result["requests"], result["sent_spans_per_s"]) == (2, 0, 0.0)


def test_refusals_an_exporter_rides_out_are_counted_and_every_span_is_sent() -> None:
    endpoint = _Refusing(refuse=2)
    server, port = _serve(endpoint)
    try:
        result = _send(port, retries=3)
    finally:
        server.stop(None)
    assert (result["gave_up"], result["exporters_failed"], result["refusals"]) == (0, 0, 3 * 2)
    assert result["requests"] == endpoint.accepted == 3
    assert result["spans"] == 256 * 6

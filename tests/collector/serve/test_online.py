"""Online scoring, end to end: live traffic through the real OpenTelemetry SDK exporter into
`tracescore serve --specs …`, and verdicts coming out through every door (DESIGN §4, §7, §8).

Two servers, each shared by several tests:

- `live` scores with specs from a directory, loads the misbehaving check plugin
  (tests/plugins_for_tests.py) and serves the HTTP API, the gRPC API and the watch streams. Tests on
  it use their own task and run ids, so they do not see each other's verdicts.
- `exported` sends its verdicts over OTLP to a receiver this module runs, and is stopped inside its
  fixture (metrics leave at shutdown), so the CLI can score the same file live and then offline.

Verdicts are waited for by polling the APIs with a deadline, never by fixed sleeps. One in-process
test at the end pins the aggregate query those APIs share (a row cap must not truncate it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast

import duckdb
import grpc
import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanProto
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode

from collector.api.v1 import verdicts_pb2, verdicts_pb2_grpc
from collector.receive.ingest import Ingest
from collector.receive.otlp_http import build_app
from collector.serve import _queries as queries
from collector.serve._api_http import HttpApi
from collector.serve._services import Services
from collector.serve.ui.routes import UiRoutes
from collector.store.schema import create_schema_sql
from scoring import ensure_verdict_schema, store_verdicts
from scoring.verdict.record import error_verdict
from tests._otel import provider
from tests._otlp import new_span_id, new_trace_id, post_json, request, span
from tests._server import ServeProcess

T = TypeVar("T")

TOOL = "lookup_shipping_cutoff"
WAIT_S = 20.0  # generous: a verdict normally shows within grace (0.3 s) + a few ms

MAIN_SPECS = f"""
name: cutoff
expected_tools: [{TOOL}]
arguments:
  {TOOL}: {{region: north}}
allow_additional: false
---
name: explodes
select: {{task: online:mixed}}
expected_tools: [{TOOL}]
---
name: slow
select: {{task: online:slow}}
expected_tools: [{TOOL}]
"""
RELOAD_V1 = "name: reload-v1\nselect: {task: online:reload}\nexpected_tools: [search]\n"
RELOAD_V2 = f"name: reload-v2\nselect: {{task: online:reload}}\nexpected_tools: [{TOOL}]\n"
# A bare string for expected_tools is rejected at load time (DESIGN §6).
RELOAD_BROKEN = f"name: reload-v3\nselect: {{task: online:reload}}\nexpected_tools: {TOOL}\n"

EXPORT_SPEC = f"""
name: export-cutoff
select: {{task: export:cutoff}}
expected_tools: [{TOOL}]
arguments:
  {TOOL}: {{region: north}}
"""
EXPORT_EXPLODES = f"name: explodes\nselect: {{task: export:cutoff}}\nexpected_tools: [{TOOL}]\n"


# ---------------------------------------------------------------------------------------------------
# helpers


def wait_for(fetch: Callable[[], T | None], what: str, server: ServeProcess | None = None) -> T:
    """Poll `fetch` until it returns something truthy; fail naming `what` (and the server's log)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        value = fetch()
        if value:
            return value
        if time.monotonic() > deadline:
            log = f"\nserver log:\n{server.log()}" if server is not None else ""
            pytest.fail(f"timed out after {WAIT_S:g} s waiting for {what}{log}")
        time.sleep(0.05)


CALLED: set[tuple[str, str]] = set()  # (method, path) of every API call this module made


def _base(server: ServeProcess) -> str:
    return f"http://127.0.0.1:{server.http_port}"


def http(server: ServeProcess, path: str, payload: Any = None) -> tuple[int, Any]:
    """GET (or POST `payload` as JSON) an API path; (status, decoded JSON body)."""
    method = "GET" if payload is None else "POST"
    CALLED.add((method, path.split("?", maxsplit=1)[0]))
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(
        _base(server) + path, data=data, headers={"Content-Type": "application/json"}, method=method
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            body = response.read()
            status = response.status
            kind = response.headers.get_content_type()
    except urllib.error.HTTPError as exc:
        body, status, kind = exc.read(), exc.code, exc.headers.get_content_type()
    return status, (json.loads(body) if kind == "application/json" else body.decode())


def get(server: ServeProcess, path: str) -> Any:
    status, body = http(server, path)
    assert status == 200, (path, status, body)
    return body


def verdicts(server: ServeProcess, **query: str) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], get(server, "/api/v1/verdicts?" + urllib.parse.urlencode(query)))


def wait_verdicts(server: ServeProcess, count: int, **query: str) -> list[dict[str, Any]]:
    """At least `count` stored verdicts matching the filters."""
    return wait_for(
        lambda: found if len(found := verdicts(server, **query)) >= count else None,
        f"{count} verdict(s) for {query}",
        server,
    )


def by_spec(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["spec"]: row for row in rows}


def by_run(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["run_id"]: row for row in rows}


def prometheus(server: ServeProcess, name: str) -> float:
    """The value of one sample of the server's /metrics (0 when absent)."""
    for line in cast(str, get(server, "/metrics")).splitlines():
        sample, _, value = line.rpartition(" ")
        if sample == name:
            return float(value)
    return 0.0


def watchers(server: ServeProcess) -> float:
    return prometheus(server, "tracescore_watchers")


def tracescore(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def new_run_id() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"


def without_time(verdict: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in verdict.items() if k != "scored_at"}


def write_atomically(path: Path, text: str) -> None:
    """Replace a spec file in one step, so the server never reads half an edit."""
    staging = path.parent.parent / f".{path.name}.{uuid.uuid4().hex}"
    staging.write_text(text)
    os.replace(staging, path)


@dataclass(frozen=True, slots=True)
class SentRun:
    run_id: str
    task: str | None
    context: SpanContext  # the agent (root) span

    @property
    def trace_id(self) -> str:
        return format(self.context.trace_id, "032x")

    @property
    def root_span_id(self) -> str:
        return format(self.context.span_id, "016x")


class Agent:
    """Agent runs in the OpenTelemetry GenAI convention, through the real SDK and OTLP exporter."""

    def __init__(self, tracer_provider: TracerProvider) -> None:
        self._provider = tracer_provider
        self._tracer = tracer_provider.get_tracer("tests.online")

    def run(
        self,
        task: str | None,
        tools: Sequence[tuple[str, dict[str, Any]]],
        *,
        errored: Sequence[str] = (),
        run_id: str | None = None,
    ) -> SentRun:
        """One run (one trace): an agent span with the tool spans under it; flushed on return."""
        run_id = run_id or new_run_id()
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "shop",
            "gen_ai.agent.call.id": run_id,
        }
        if task is not None:
            attributes["tracescore.task.id"] = task
        with self._tracer.start_as_current_span(
            "invoke_agent shop", context=Context(), attributes=attributes
        ) as root:
            for name, arguments in tools:
                self._tool(name, arguments, error=name in errored)
        self.flush()
        return SentRun(run_id, task, root.get_span_context())

    def late_tool(self, run: SentRun, name: str, arguments: dict[str, Any]) -> None:
        """A tool span of an already completed run, arriving late (a child of its agent span)."""
        self._tool(name, arguments, context=trace.set_span_in_context(NonRecordingSpan(run.context)))
        self.flush()

    def _tool(
        self, name: str, arguments: dict[str, Any], *, error: bool = False, context: Context | None = None
    ) -> None:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": json.dumps(arguments),
        }
        with self._tracer.start_as_current_span(
            f"execute_tool {name}", context=context, attributes=attributes
        ) as tool:
            if error:
                tool.set_status(Status(StatusCode.ERROR, "upstream timeout"))

    def flush(self) -> None:
        assert self._provider.force_flush(10_000), "the SDK exporter did not flush"


# ---------------------------------------------------------------------------------------------------
# an OTLP receiver (trace and metrics services over gRPC), as a user's collector would be


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def attributes(items: Sequence[KeyValue]) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


class OtlpReceiver:
    """Records every ExportTraceServiceRequest and ExportMetricsServiceRequest it is sent."""

    def __init__(self) -> None:
        self.trace_requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.metric_requests: list[metrics_service_pb2.ExportMetricsServiceRequest] = []
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        receiver = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(
                self, req: trace_service_pb2.ExportTraceServiceRequest, context: grpc.ServicerContext
            ) -> trace_service_pb2.ExportTraceServiceResponse:
                with receiver._lock:
                    receiver.trace_requests.append(req)
                return trace_service_pb2.ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(
                self, req: metrics_service_pb2.ExportMetricsServiceRequest, context: grpc.ServicerContext
            ) -> metrics_service_pb2.ExportMetricsServiceResponse:
                with receiver._lock:
                    receiver.metric_requests.append(req)
                return metrics_service_pb2.ExportMetricsServiceResponse()

        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self._server)  # type: ignore[no-untyped-call]
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self._server)  # type: ignore[no-untyped-call]
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spans(self) -> list[tuple[dict[str, Any], str, SpanProto]]:
        """(resource attributes, scope name, span) of every span received."""
        with self._lock:
            requests = list(self.trace_requests)
        return [
            (attributes(rs.resource.attributes), ss.scope.name, s)
            for r in requests
            for rs in r.resource_spans
            for ss in rs.scope_spans
            for s in ss.spans
        ]

    def metrics(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        """Metric name → (attributes, data point) of the last export that carried that metric.

        The SDK exports cumulative values, so the last export holds the totals."""
        with self._lock:
            requests = list(self.metric_requests)
        latest: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        for r in requests:
            for rm in r.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        kind = metric.WhichOneof("data")
                        points = getattr(metric, kind).data_points if kind else []
                        latest[metric.name] = [(attributes(p.attributes), p) for p in points]
        return latest

    def stop(self) -> None:
        self._server.stop(None)


# ---------------------------------------------------------------------------------------------------
# the live server


@dataclass
class Live:
    server: ServeProcess
    agent: Agent
    specs_dir: Path


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("live")
    specs_dir = root / "specs"
    specs_dir.mkdir()
    (specs_dir / "main.yaml").write_text(MAIN_SPECS)
    (specs_dir / "reload.yaml").write_text(RELOAD_V1)
    server = ServeProcess(
        root / "live.duckdb",
        extra_args=("--specs", str(specs_dir), "--plugin", "tests.plugins_for_tests"),
    ).start()
    tracer_provider = provider(server, "grpc")
    try:
        yield Live(server, Agent(tracer_provider), specs_dir)
        tracer_provider.shutdown()
        assert server.stop() == 0, server.log()
    finally:
        server.kill()


def test_health_and_readiness_while_serving(live: Live) -> None:
    assert http(live.server, "/healthz") == (200, {"status": "ok"})
    assert http(live.server, "/readyz") == (200, {"ready": True})


def test_verdicts_of_live_runs_arrive_through_the_http_api(live: Live) -> None:
    task = "online:cutoff"
    passing = live.agent.run(task, [(TOOL, {"region": "north", "day": 1})])
    wrong_argument = live.agent.run(task, [(TOOL, {"region": "south"})])
    strict = live.agent.run(task, [(TOOL, {"region": "north"}), ("send_email", {"to": "x"})])

    stored = by_run(wait_verdicts(live.server, 3, task=task, spec="cutoff"))
    assert set(stored) == {passing.run_id, wrong_argument.run_id, strict.run_id}

    ok = stored[passing.run_id]
    assert (ok["label"], ok["passed"], ok["value"], ok["reason"]) == ("pass", True, 1.0, None)
    assert (ok["trace_id"], ok["task"], ok["run_version"]) == (passing.trace_id, task, 1)

    wrong = stored[wrong_argument.run_id]
    assert (wrong["label"], wrong["passed"], wrong["value"]) == ("fail", False, 0.5)
    assert wrong["failed_argument_checks"] == [{"tool": TOOL, "arguments": {"region": "north"}}]
    assert wrong["missing_tools"] == []

    extra = stored[strict.run_id]
    assert (extra["label"], extra["passed"], extra["value"]) == ("fail", False, 1.0)
    assert extra["additional_tools"] == ["send_email"]
    assert "unexpected tools not allowed: send_email" in extra["reason"]

    # Filters: by label, by run, by spec.
    assert [v["run_id"] for v in verdicts(live.server, task=task, label="pass")] == [passing.run_id]
    assert {v["run_id"] for v in verdicts(live.server, task=task, label="fail")} == {
        wrong_argument.run_id,
        strict.run_id,
    }
    assert [without_time(v) for v in verdicts(live.server, run=wrong_argument.run_id)] == [
        without_time(wrong)
    ]
    assert verdicts(live.server, task=task, spec="no-such-spec") == []
    assert http(live.server, "/api/v1/verdicts?label=maybe")[0] == 400

    # Runs: complete, one version, their executions counted.
    runs = {r["run_id"]: r for r in get(live.server, f"/api/v1/runs?task={task}")}
    assert {run_id: (r["status"], r["version"], r["n_executions"]) for run_id, r in runs.items()} == {
        passing.run_id: ("complete", 1, 1),
        wrong_argument.run_id: ("complete", 1, 1),
        strict.run_id: ("complete", 1, 2),
    }
    assert runs[passing.run_id]["trace_id"] == passing.trace_id

    # Task aggregates over the three rollouts.
    (result,) = get(live.server, f"/api/v1/tasks?task={task}")
    assert result["task"] == task and result["spec"] == "cutoff"
    assert (result["n_runs"], result["n_scored"], result["n_passed"], result["n_errors"]) == (3, 3, 1, 0)
    assert result["pass_rate"] == pytest.approx(1 / 3)
    assert result["mean_value"] == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    assert (result["k"], result["pass_at_k"], result["pass_hat_k"]) == (3, 1.0, 0.0)
    assert result["in_learning_zone"] is True


class Watch:
    """A gRPC WatchVerdicts stream read on a thread, so a test can wait on it with a deadline."""

    def __init__(self, stub: verdicts_pb2_grpc.VerdictsStub, req: verdicts_pb2.WatchVerdictsRequest) -> None:
        self.received: list[verdicts_pb2.Verdict] = []
        self.error: grpc.RpcError | None = None
        self._call = stub.WatchVerdicts(req, timeout=WAIT_S * 2)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for message in self._call:
                self.received.append(message)
        except grpc.RpcError as exc:
            self.error = exc

    def wait(self, count: int, server: ServeProcess) -> list[verdicts_pb2.Verdict]:
        wait_for(
            lambda: len(self.received) >= count or self.error is not None,
            f"{count} verdict(s) on the gRPC watch stream",
            server,
        )
        assert len(self.received) >= count, f"the watch stream ended: {self.error}"
        return list(self.received)

    def cancel(self) -> None:
        self._call.cancel()
        self._thread.join(5)


def test_verdicts_arrive_through_the_grpc_watch_stream_and_queries(live: Live) -> None:
    task = "online:grpc"
    with grpc.insecure_channel(live.server.grpc_endpoint) as channel:
        stub = verdicts_pb2_grpc.VerdictsStub(channel)  # type: ignore[no-untyped-call]
        before = watchers(live.server)
        everything = Watch(stub, verdicts_pb2.WatchVerdictsRequest())
        only_cutoff = Watch(stub, verdicts_pb2.WatchVerdictsRequest(spec="cutoff"))
        only_explodes = Watch(stub, verdicts_pb2.WatchVerdictsRequest(spec="explodes"))
        wait_for(lambda: watchers(live.server) >= before + 3, "three watch streams subscribed", live.server)

        # The streams are open before the traffic: the verdicts come to them as they are stored.
        passing = live.agent.run(task, [(TOOL, {"region": "north"})])
        failing = live.agent.run(task, [(TOOL, {"region": "south"})])
        try:
            streamed = everything.wait(2, live.server)
            cutoff = only_cutoff.wait(2, live.server)
        finally:
            for watch in (everything, only_cutoff, only_explodes):
                watch.cancel()
        assert only_explodes.received == []  # no spec `explodes` verdict for these runs
        assert {(m.run_id, m.spec, m.label) for m in streamed} == {
            (passing.run_id, "cutoff", "pass"),
            (failing.run_id, "cutoff", "fail"),
        }
        assert [m.json for m in cutoff] == [m.json for m in streamed]
        stored = by_run(wait_verdicts(live.server, 2, task=task))  # stored just after their delivery
        for message in streamed:
            assert json.loads(message.json) == without_time(stored[message.run_id])
            assert message.trace_id == stored[message.run_id]["trace_id"]
            assert message.task == task
            assert message.run_version == 1
            assert message.HasField("passed") and message.HasField("value")
            assert [c.kind for c in message.checks] == [c["kind"] for c in stored[message.run_id]["checks"]]

        # GetRunVerdicts: the stored verdicts of one run.
        answer = stub.GetRunVerdicts(verdicts_pb2.GetRunVerdictsRequest(run_id=failing.run_id), timeout=10)
        (got,) = answer.verdicts
        assert (got.run_id, got.spec, got.label, got.passed, got.value) == (
            failing.run_id,
            "cutoff",
            "fail",
            False,
            0.5,
        )
        assert without_time(json.loads(got.json)) == without_time(stored[failing.run_id])
        with pytest.raises(grpc.RpcError) as refused:
            stub.GetRunVerdicts(verdicts_pb2.GetRunVerdictsRequest(), timeout=10)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT

        # ListTaskResults: the task's aggregate.
        (result,) = stub.ListTaskResults(verdicts_pb2.ListTaskResultsRequest(task=task), timeout=10).results
        assert (result.task, result.spec, result.n_runs, result.n_scored, result.n_passed) == (
            task,
            "cutoff",
            2,
            2,
            1,
        )
        assert (result.pass_rate, result.k, result.pass_at_k, result.pass_hat_k) == (0.5, 2, 1.0, 0.0)
        assert result.in_learning_zone
        over_http = get(live.server, f"/api/v1/tasks?task={task}")[0]
        assert result.pass_rate == over_http["pass_rate"]
        # What the task's clean executions took, as `tracescore report` gives it: one call per run.
        latency = result.execution_latency
        assert result.HasField("execution_latency") and latency.n == 2
        assert 0 < latency.p50_ms <= latency.p95_ms <= latency.p99_ms
        assert over_http["execution_latency"] == {
            "n": 2,
            "p50_ms": latency.p50_ms,
            "p95_ms": latency.p95_ms,
            "p99_ms": latency.p99_ms,
        }
        assert not result.HasField("latency_passed")  # the spec sets no percentile bound

        # include_existing: a late watcher gets what is already stored first.
        existing = Watch(
            stub, verdicts_pb2.WatchVerdictsRequest(run_id=passing.run_id, include_existing=True)
        )
        try:
            (again,) = existing.wait(1, live.server)
        finally:
            existing.cancel()
        assert (again.run_id, again.spec, again.label) == (passing.run_id, "cutoff", "pass")
    # A watcher that leaves is unsubscribed.
    wait_for(lambda: watchers(live.server) == before, "the watch streams unsubscribed", live.server)


def test_tracescore_watch_and_the_ndjson_stream_print_verdicts_as_they_arrive(live: Live) -> None:
    task = "online:watch"
    # The run ids are known before the runs exist, so the watchers can filter on them.
    passing_id, failing_id = new_run_id(), new_run_id()
    before = watchers(live.server)
    common = ("watch", "--db", str(live.server.db), "--count", "1", "--timeout", str(WAIT_S))
    as_json = subprocess.Popen(
        [sys.executable, "-m", "collector.cli", *common, "--run", passing_id, "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    as_table = subprocess.Popen(
        [sys.executable, "-m", "collector.cli", *common, "--run", failing_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: watchers(live.server) >= before + 2, "two `tracescore watch` streams", live.server)
        live.agent.run(task, [(TOOL, {"region": "north"})], run_id=passing_id)
        live.agent.run(task, [(TOOL, {"region": "west"})], run_id=failing_id)
        out_json, err_json = as_json.communicate(timeout=WAIT_S + 10)
        out_table, err_table = as_table.communicate(timeout=WAIT_S + 10)
    finally:
        as_json.kill()
        as_table.kill()
    assert as_json.returncode == 0, err_json  # one verdict, and it passed
    (line,) = out_json.splitlines()
    printed = json.loads(line)
    assert (printed["run_id"], printed["spec"], printed["label"], printed["task"]) == (
        passing_id,
        "cutoff",
        "pass",
        task,
    )
    # Delivered first, stored just after (collector/serve/_verdict_store.py): wait for the stored copy.
    assert without_time(printed) == without_time(wait_verdicts(live.server, 1, run=passing_id)[0])

    assert as_table.returncode == 1, err_table  # the verdict it waited for failed
    (row,) = out_table.splitlines()
    assert row.startswith("FAIL  cutoff") and f"run {failing_id} (v1) value 0.50" in row, row

    # The HTTP NDJSON stream itself, with the stored verdicts first.
    CALLED.add(("GET", "/api/v1/verdicts/watch"))
    url = f"{_base(live.server)}/api/v1/verdicts/watch?run={failing_id}&existing=true"
    with urllib.request.urlopen(url, timeout=10) as stream:
        assert stream.headers.get_content_type() == "application/x-ndjson"
        first = json.loads(stream.readline())
    assert without_time(first) == without_time(wait_verdicts(live.server, 1, run=failing_id)[0])
    # Watchers that went away (the CLI exited, the stream was closed) are no longer subscribed.
    wait_for(lambda: watchers(live.server) == before, "the closed watchers unsubscribed", live.server)


def test_a_late_span_reopens_the_run_and_versions_its_verdict(live: Live) -> None:
    task = "online:late"
    run = live.agent.run(task, [(TOOL, {"region": "south"})])
    (first,) = wait_verdicts(live.server, 1, run=run.run_id)
    assert (first["label"], first["value"], first["run_version"]) == ("fail", 0.5, 1)

    # The run completed and was scored; a span of it arrives late: it re-opens, completes again, and
    # its new verdict is stored beside the first one.
    live.agent.late_tool(run, TOOL, {"region": "north"})
    latest = wait_for(
        lambda: [v for v in verdicts(live.server, run=run.run_id) if v["run_version"] == 2],
        "the verdict of the re-opened run",
        live.server,
    )
    assert [(v["spec"], v["label"], v["value"], v["passed"]) for v in latest] == [
        ("cutoff", "pass", 1.0, True)
    ]
    (run_row,) = [r for r in get(live.server, f"/api/v1/runs?task={task}") if r["run_id"] == run.run_id]
    assert (run_row["status"], run_row["version"], run_row["n_executions"]) == ("complete", 2, 2)

    # The history stays queryable: every version on request, the latest by default.
    history = verdicts(live.server, run=run.run_id, all_versions="true")
    assert sorted((v["run_version"], v["label"]) for v in history) == [(1, "fail"), (2, "pass")]
    assert without_time(next(v for v in history if v["run_version"] == 1)) == without_time(first)
    assert [v["run_version"] for v in verdicts(live.server, run=run.run_id)] == [2]
    (result,) = get(live.server, f"/api/v1/tasks?task={task}")
    assert (result["n_runs"], result["n_passed"]) == (1, 1)  # aggregates count the latest verdict only

    with grpc.insecure_channel(live.server.grpc_endpoint) as channel:
        stub = verdicts_pb2_grpc.VerdictsStub(channel)  # type: ignore[no-untyped-call]
        every = stub.GetRunVerdicts(
            verdicts_pb2.GetRunVerdictsRequest(run_id=run.run_id, all_versions=True), timeout=10
        ).verdicts
        latest_only = stub.GetRunVerdicts(
            verdicts_pb2.GetRunVerdictsRequest(run_id=run.run_id), timeout=10
        ).verdicts
    assert sorted((v.run_version, v.label) for v in every) == [(1, "fail"), (2, "pass")]
    assert [(v.run_version, v.label) for v in latest_only] == [(2, "pass")]


def test_a_run_resumed_in_a_second_trace_is_judged_whole(live: Live) -> None:
    # Runs are judged from what the writer just committed, unless they continue over several traces
    # (a paused run resumed later under the same run id): then from the store, which has all of it.
    task = "online:resumed"
    first = live.agent.run(task, [(TOOL, {"region": "north"})])
    (verdict,) = wait_verdicts(live.server, 1, run=first.run_id)
    assert (verdict["label"], verdict["run_version"]) == ("pass", 1)

    second = live.agent.run(task, [("send_email", {"to": "x"})], run_id=first.run_id)
    assert second.trace_id != first.trace_id
    (latest,) = wait_for(
        lambda: [v for v in verdicts(live.server, run=first.run_id) if v["run_version"] == 2],
        "the verdict of the resumed run",
        live.server,
    )
    # Judged on both traces: the tool from the first is found, the second's extra tool breaks strict mode.
    assert (latest["label"], latest["missing_tools"], latest["additional_tools"]) == (
        "fail",
        [],
        ["send_email"],
    )
    # Each version stored once: the resumed run was read back from the store, so its verdict replaced
    # any of the same key (only verdicts of versions the writer just handed over skip that).
    history = verdicts(live.server, run=first.run_id, all_versions="true")
    assert sorted((v["run_version"], v["label"]) for v in history) == [(1, "pass"), (2, "fail")]


def spec_status(server: ServeProcess) -> dict[str, Any]:
    return cast(dict[str, Any], get(server, "/api/v1/specs"))


def spec_names(server: ServeProcess) -> set[str]:
    return {s["name"] for s in spec_status(server)["specs"]}


def test_spec_edits_are_reloaded_and_a_broken_edit_keeps_the_last_good_specs(live: Live) -> None:
    task = "online:reload"
    reload_file = live.specs_dir / "reload.yaml"
    status = spec_status(live.server)
    assert status["reload_error"] is None
    assert spec_names(live.server) == {"cutoff", "explodes", "slow", "reload-v1"}

    before = live.agent.run(task, [(TOOL, {"region": "north"})])
    assert by_spec(wait_verdicts(live.server, 2, run=before.run_id))["reload-v1"]["label"] == "fail"

    try:
        # A good edit: the new spec replaces the old one for runs that complete from now on.
        write_atomically(reload_file, RELOAD_V2)
        wait_for(lambda: "reload-v2" in spec_names(live.server), "the edited spec in force", live.server)
        status = spec_status(live.server)
        assert status["reload_error"] is None and status["reloads"] >= 1
        assert spec_names(live.server) == {"cutoff", "explodes", "slow", "reload-v2"}
        fingerprint = next(s["fingerprint"] for s in status["specs"] if s["name"] == "reload-v2")

        after = live.agent.run(task, [(TOOL, {"region": "north"})])
        scored = by_spec(wait_verdicts(live.server, 2, run=after.run_id))
        assert set(scored) == {"cutoff", "reload-v2"}
        new = scored["reload-v2"]
        assert (new["label"], new["spec_fingerprint"]) == ("pass", fingerprint)
        # The run scored before the edit keeps its verdict from the old spec.
        assert set(by_spec(verdicts(live.server, run=before.run_id))) == {"cutoff", "reload-v1"}

        # A broken edit: reported, and the last good specs keep producing verdicts.
        failures = prometheus(live.server, "tracescore_spec_reload_failures_total")
        write_atomically(reload_file, RELOAD_BROKEN)
        broken = wait_for(
            lambda: s if (s := spec_status(live.server))["reload_error"] else None,
            "the broken edit reported",
            live.server,
        )
        assert str(reload_file) in broken["reload_error"] and "expected_tools" in broken["reload_error"]
        assert broken["failed_reloads"] >= 1
        assert {s["name"] for s in broken["specs"]} == {"cutoff", "explodes", "slow", "reload-v2"}
        assert prometheus(live.server, "tracescore_spec_reload_failures_total") == failures + 1
        assert http(live.server, "/readyz")[0] == 200

        during = live.agent.run(task, [(TOOL, {"region": "north"})])
        scored = by_spec(wait_verdicts(live.server, 2, run=during.run_id))
        assert set(scored) == {"cutoff", "reload-v2"}
        new = scored["reload-v2"]
        assert (new["label"], new["spec_fingerprint"]) == ("pass", fingerprint)
    finally:
        # Fixing the file clears the error (and leaves the shared server as the other tests expect).
        write_atomically(reload_file, RELOAD_V2)
    wait_for(
        lambda: spec_status(live.server)["reload_error"] is None, "the fixed spec file reloaded", live.server
    )


def test_a_raising_scorer_gives_an_error_verdict_and_the_server_stays_up(live: Live) -> None:
    task = "online:mixed"
    errors_before = prometheus(
        live.server, 'tracescore_verdicts_total{spec="explodes",task="online:mixed",label="error"}'
    )
    run = live.agent.run(task, [(TOOL, {"region": "north"})])
    scored = by_spec(wait_verdicts(live.server, 2, run=run.run_id))
    assert set(scored) == {"cutoff", "explodes"}

    error = scored["explodes"]
    assert (error["label"], error["passed"], error["value"]) == ("error", None, None)
    assert error["reason"] == "scoring failed: RuntimeError: this scorer always raises"
    assert (error["run_id"], error["trace_id"], error["task"], error["run_version"]) == (
        run.run_id,
        run.trace_id,
        task,
        1,
    )
    # The other spec's verdict for the same run is a normal one.
    normal = scored["cutoff"]
    assert (normal["label"], normal["passed"], normal["value"]) == ("pass", True, 1.0)
    assert [v["spec"] for v in verdicts(live.server, run=run.run_id, label="error")] == ["explodes"]

    (result,) = get(live.server, f"/api/v1/tasks?task={task}&spec=explodes")
    assert (result["n_runs"], result["n_scored"], result["n_errors"], result["pass_rate"]) == (1, 0, 1, None)
    assert (
        prometheus(
            live.server, 'tracescore_verdicts_total{spec="explodes",task="online:mixed",label="error"}'
        )
        == errors_before + 1
    )

    # The server is still up and still scoring.
    assert live.server.process is not None and live.server.process.poll() is None
    assert http(live.server, "/readyz") == (200, {"ready": True})
    again = live.agent.run(task, [(TOOL, {"region": "south"})])
    assert {(v["spec"], v["label"]) for v in wait_verdicts(live.server, 2, run=again.run_id)} == {
        ("cutoff", "fail"),
        ("explodes", "error"),
    }


def test_a_slow_scorer_does_not_stall_ingestion(live: Live) -> None:
    task = "online:slow"
    # Two runs for the `slow` spec: the plugin sleeps 1.5 s for each, so scoring is busy for ~3 s.
    slow = [live.agent.run(task, [(TOOL, {"region": "north"})]) for _ in range(2)]
    wait_for(
        lambda: (
            {r["run_id"] for r in get(live.server, f"/api/v1/runs?task={task}") if r["status"] == "complete"}
            >= {r.run_id for r in slow}
        ),
        "the slow runs completed (handed to scoring)",
        live.server,
    )

    # While the scorer is busy, an OTLP export is acknowledged at once…
    trace_id, root = new_trace_id(), new_span_id()
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "shop",
        "tracescore.task.id": "online:fast",
    }
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": TOOL}
    document = request(
        [
            span(trace_id, root, "invoke_agent shop", attributes=agent),
            span(trace_id, new_span_id(), f"execute_tool {TOOL}", parent=root, attributes=tool),
        ]
    )
    started = time.monotonic()
    answer = post_json(live.server.http_url, document)
    elapsed = time.monotonic() - started
    assert answer == (200, {})
    assert elapsed < 0.5, f"an export took {elapsed:.2f} s while a scorer was busy"
    assert all(verdicts(live.server, run=r.run_id, spec="slow") == [] for r in slow)  # still scoring

    # …and its run is stored and completed, while the slow verdicts are still being computed.
    wait_for(
        lambda: [r for r in get(live.server, "/api/v1/runs?task=online:fast") if r["status"] == "complete"],
        "the fast run completed",
        live.server,
    )
    assert any(verdicts(live.server, run=r.run_id, spec="slow") == [] for r in slow)

    for run in slow:
        (verdict,) = wait_verdicts(live.server, 1, run=run.run_id, spec="slow")
        assert verdict["label"] == "pass"
        (plugin_check,) = [c for c in verdict["checks"] if c["kind"] == "test_plugin"]
        assert (plugin_check["target"], plugin_check["satisfied"], plugin_check["detail"]) == (
            "slow",
            True,
            "took 1.5 s",
        )


def test_spans_of_the_tracescore_scope_are_ignored(live: Live) -> None:
    own_trace, own_root = new_trace_id(), new_span_id()
    attributes = {"gen_ai.operation.name": "evaluate", "gen_ai.evaluation.name": "cutoff"}
    own = request(
        [
            span(own_trace, own_root, "evaluate cutoff", attributes=attributes),
            span(own_trace, new_span_id(), "evaluate cutoff", parent=own_root, attributes=attributes),
        ],
        scope="tracescore",
    )
    ignored_before = prometheus(live.server, "tracescore_spans_own_ignored_total")
    assert post_json(live.server.http_url, own) == (200, {})
    # A normal run sent after them is stored and scored: by then the own spans were dealt with.
    barrier = live.agent.run("online:own", [(TOOL, {"region": "north"})])
    wait_verdicts(live.server, 1, run=barrier.run_id)

    def count(sql: str) -> int:
        status, answer = http(live.server, "/api/v1/sql", {"query": sql})
        assert status == 200, answer
        return int(answer["rows"][0][0])

    assert count(f"SELECT count(*) FROM spans WHERE trace_id = '{own_trace}'") == 0
    assert count(f"SELECT count(*) FROM run_traces WHERE trace_id = '{own_trace}'") == 0
    assert count(f"SELECT count(*) FROM spans WHERE trace_id = '{barrier.trace_id}'") == 2
    assert prometheus(live.server, "tracescore_spans_own_ignored_total") == ignored_before + 2


# The API paths this module calls (the OpenAPI test checks each is documented).
PATHS_CALLED = {
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/api/v1/runs"),
    ("GET", "/api/v1/verdicts"),
    ("GET", "/api/v1/verdicts/watch"),
    ("GET", "/api/v1/tasks"),
    ("GET", "/api/v1/specs"),
    ("POST", "/api/v1/sql"),
    ("POST", "/api/v1/score"),
}
OTLP_PATHS = {"/v1/traces", "/v1/traces/"}  # OTLP's own contract, not part of the API description
UI_PAGES = {"/", "/ui/{name}"}  # the live UI's static pages (docs/ui.md), not part of the API description


def registered_routes() -> set[tuple[str, str]]:
    """Every GET/POST route the server's aiohttp app registers (built here exactly as serve builds it)."""
    app = build_app(cast(Ingest, None), 1024)
    api = HttpApi(cast(Services, None))
    api.routes(app)
    UiRoutes(cast(Services, None), api.read, None).add(app)
    routes = set()
    for route in app.router.routes():
        if route.method in ("GET", "POST"):
            routes.add((route.method, route.resource.canonical if route.resource else ""))
    return routes


def test_the_openapi_document_describes_every_route(live: Live) -> None:
    document = get(live.server, "/api/v1/openapi.json")
    assert document["openapi"].startswith("3.")
    described = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
        if method in ("get", "post")
    }
    routes = registered_routes()
    api_routes = {(m, p) for m, p in routes if p not in OTLP_PATHS | UI_PAGES}
    assert {p for _, p in routes} >= OTLP_PATHS
    assert "/v1/traces" in document["info"]["description"]
    assert described == api_routes  # nothing undocumented, nothing documented that is not served
    assert described >= PATHS_CALLED | CALLED

    for method, path in sorted(described):
        operation = document["paths"][path][method.lower()]
        assert operation.get("summary") and "200" in operation["responses"], (method, path)
        if method == "POST":
            assert operation["requestBody"]["content"]["application/json"]["schema"], path
    # Each described GET answers on the live server (the watch stream is opened and closed).
    for method, path in sorted(described):
        if method != "GET":
            continue
        # One run, task or conversation (a required id) is asked in tests/collector/serve/test_ui_api.py.
        if any(p.get("required") for p in document["paths"][path]["get"].get("parameters", [])):
            continue
        with urllib.request.urlopen(_base(live.server) + path, timeout=10) as response:
            assert response.status == 200, path
    spec = {"name": "doc-check", "expected_tools": [TOOL]}
    assert http(live.server, "/api/v1/sql", {"query": "SELECT 1 AS one"}) == (
        200,
        {"columns": ["one"], "rows": [[1]], "truncated": False},
    )
    assert http(live.server, "/api/v1/score", {"specs": [spec], "run": "no-such-run"}) == (200, [])
    assert http(live.server, "/api/v1/report", {"specs": [spec], "task": "no-such-task"}) == (200, [])


# ---------------------------------------------------------------------------------------------------
# verdicts back into the user's pipeline over OTLP, and the CLI following the data


@dataclass
class Exported:
    server: ServeProcess
    receiver: OtlpReceiver
    runs: dict[str, SentRun]
    online: list[dict[str, Any]]  # the stored verdicts, read through the API while serving
    forwarded_spans: int  # the server's own verdict spans, sent back to it
    forwarded_trace_ids: set[str]
    own_ignored: float  # what its /metrics counted of them
    live_score: subprocess.CompletedProcess[str]
    stopped_score: subprocess.CompletedProcess[str]
    stop_code: int = -1
    metric_names: set[str] = field(default_factory=set)


def verdict_spans(receiver: OtlpReceiver) -> list[SpanProto]:
    return [s for resource, scope, s in receiver.spans() if scope == "tracescore"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    """A server exporting to our receiver: traffic, verdicts, `score` live, stop, `score` on the file."""
    root = tmp_path_factory.mktemp("exported")
    spec_file, explodes_file = root / "export.yaml", root / "explodes.yaml"
    spec_file.write_text(EXPORT_SPEC)
    explodes_file.write_text(EXPORT_EXPLODES)
    receiver = OtlpReceiver()
    server = ServeProcess(
        root / "exported.duckdb",
        extra_args=(
            "--specs",
            str(spec_file),
            str(explodes_file),
            "--plugin",
            "tests.plugins_for_tests",
            "--export-endpoint",
            receiver.endpoint,
            "--export-protocol",
            "grpc",
        ),
        # The SDK's standard variable: export verdict spans within 0.1 s instead of 5 s.
        env={"OTEL_BSP_SCHEDULE_DELAY": "100"},
    )
    tracer_provider = provider(server.start(), "http")
    try:
        agent = Agent(tracer_provider)
        runs = {
            "pass": agent.run("export:cutoff", [(TOOL, {"region": "north"})]),
            "fail": agent.run(
                "export:cutoff", [(TOOL, {"region": "south"}), ("send_email", {})], errored=["send_email"]
            ),
        }
        tracer_provider.shutdown()
        online = wait_verdicts(server, 4, task="export:cutoff")
        wait_for(lambda: len(verdict_spans(receiver)) >= 4, "4 verdict spans at the receiver", server)

        # The server's own output comes back to it (a user's collector fanning everything in).
        ignored_before = prometheus(server, "tracescore_spans_own_ignored_total")
        with grpc.insecure_channel(server.grpc_endpoint) as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]
            for sent in list(receiver.trace_requests):
                stub.Export(sent, timeout=10)
        forwarded = verdict_spans(receiver)
        own_ignored = prometheus(server, "tracescore_spans_own_ignored_total") - ignored_before

        score = ("score", "--db", str(server.db), "--spec", str(spec_file), "--format", "json")
        live_score = tracescore(*score)  # the server holds the file: this goes through its API
        scenario = Exported(
            server=server,
            receiver=receiver,
            runs=runs,
            online=online,
            forwarded_spans=len(forwarded),
            forwarded_trace_ids={s.trace_id.hex() for s in forwarded},
            own_ignored=own_ignored,
            live_score=live_score,
            stopped_score=live_score,
        )
        scenario.stop_code = server.stop()  # flushes the verdict metrics
        expected_metrics = {"tracescore.verdicts", "tracescore.verdict.value", "tracescore.tool.duration"}
        wait_for(
            lambda: expected_metrics <= set(receiver.metrics()), "the verdict metrics at the receiver", server
        )
        scenario.metric_names = set(receiver.metrics())
        scenario.stopped_score = tracescore(*score)  # no server now: the CLI opens the file itself
        yield scenario
    finally:
        server.kill()
        receiver.stop()


def test_each_verdict_reaches_the_otlp_receiver_as_a_gen_ai_evaluation_event(exported: Exported) -> None:
    assert len(exported.online) == 4
    spans = verdict_spans(exported.receiver)
    for resource, scope, _ in exported.receiver.spans():
        assert (resource.get("service.name"), scope) == ("tracescore", "tracescore")
    runs = {run.run_id: run for run in exported.runs.values()}
    labels = set()
    for verdict in exported.online:
        (exported_span,) = [
            s
            for s in spans
            if attributes(s.attributes).get("tracescore.run.id") == verdict["run_id"]
            and attributes(s.attributes).get("gen_ai.evaluation.name") == verdict["spec"]
        ]
        assert exported_span.name == f"evaluate {verdict['spec']}"
        span_attributes = attributes(exported_span.attributes)
        assert span_attributes["tracescore.spec.fingerprint"] == verdict["spec_fingerprint"]
        assert span_attributes["tracescore.run.version"] == verdict["run_version"] == 1
        assert span_attributes["tracescore.task.id"] == "export:cutoff"

        (event,) = exported_span.events
        assert event.name == "gen_ai.evaluation.result"
        label = verdict["label"]
        labels.add(label)
        expected = {
            "gen_ai.evaluation.name": verdict["spec"],
            "gen_ai.evaluation.score.label": label,
            "gen_ai.evaluation.explanation": verdict["reason"] or "all checks satisfied",
        }
        if verdict["value"] is not None:
            expected["gen_ai.evaluation.score.value"] = verdict["value"]
        if label == "error":
            expected["error.type"] = "scorer_error"
        assert attributes(event.attributes) == expected

        # Linked to the run's trace (its agent span), not part of it.
        run = runs[verdict["run_id"]]
        assert [(link.trace_id.hex(), link.span_id.hex()) for link in exported_span.links] == [
            (run.trace_id, run.root_span_id)
        ]
        assert exported_span.trace_id.hex() != run.trace_id
    assert labels == {"pass", "fail", "error"}
    passing = next(v for v in exported.online if v["label"] == "pass")
    assert passing["reason"] is None  # so its explanation above was "all checks satisfied"


def test_verdict_and_tool_latency_metrics_reach_the_otlp_receiver(exported: Exported) -> None:
    assert exported.stop_code == 0, exported.server.log()
    metrics = exported.receiver.metrics()
    assert {"tracescore.verdicts", "tracescore.verdict.value", "tracescore.tool.duration"} <= set(metrics)

    counts = {
        (a["tracescore.spec"], a["gen_ai.evaluation.score.label"]): p.as_int
        for a, p in metrics["tracescore.verdicts"]
    }
    assert counts == {("export-cutoff", "pass"): 1, ("export-cutoff", "fail"): 1, ("explodes", "error"): 2}

    values = {a["tracescore.spec"]: (p.count, p.sum) for a, p in metrics["tracescore.verdict.value"]}
    assert values == {"export-cutoff": (2, 1.5)}  # an error verdict has no value

    durations = {(a["gen_ai.tool.name"], a["error"]): p for a, p in metrics["tracescore.tool.duration"]}
    assert set(durations) == {(TOOL, False), ("send_email", True)}
    assert (durations[(TOOL, False)].count, durations[("send_email", True)].count) == (2, 1)
    assert all(p.sum >= 0 and p.max < 10_000 for p in durations.values())


def test_the_server_ignores_its_own_verdict_spans_when_they_come_back(exported: Exported) -> None:
    assert exported.forwarded_spans == 4
    assert exported.own_ignored == exported.forwarded_spans
    stored = exported.server.query("SELECT DISTINCT trace_id FROM spans")
    assert not exported.forwarded_trace_ids & {row[0] for row in stored}
    assert {row[0] for row in stored} == {run.trace_id for run in exported.runs.values()}
    assert exported.server.query("SELECT count(*) FROM runs") == [(2,)]


def test_score_gives_the_same_verdicts_through_the_server_and_from_the_file(exported: Exported) -> None:
    live, stopped = exported.live_score, exported.stopped_score
    assert live.returncode == stopped.returncode == 1, (live.stderr, stopped.stderr)  # one run fails

    def ordered(output: str) -> list[dict[str, Any]]:
        return sorted(json.loads(output), key=lambda v: (v["run_id"], v["spec"]))

    assert ordered(live.stdout) == ordered(stopped.stdout)
    assert [(v["run_id"], v["label"]) for v in ordered(live.stdout)] == sorted(
        [(exported.runs["pass"].run_id, "pass"), (exported.runs["fail"].run_id, "fail")]
    )
    # And the same as what online scoring stored for that spec.
    online = [without_time(v) for v in exported.online if v["spec"] == "export-cutoff"]
    assert ordered(live.stdout) == sorted(online, key=lambda v: (v["run_id"], v["spec"]))


def test_task_aggregates_count_every_verdict_beyond_the_row_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """/api/v1/tasks and ListTaskResults aggregate through this query: the row cap meant for clients
    (MAX_ROWS, shrunk here) must not truncate what is aggregated."""
    connection = duckdb.connect()
    for statement in create_schema_sql():
        connection.execute(statement)
    ensure_verdict_schema(connection)
    stored = [
        error_verdict(f"run-{i}", "0" * 32, "task", "spec", "fp", "default", 1, "boom") for i in range(8)
    ]
    store_verdicts(connection, [replace(v, label="pass", passed=True, value=1.0) for v in stored[:5]])
    store_verdicts(connection, stored[5:])
    monkeypatch.setattr(queries, "MAX_ROWS", 3)
    (result,) = queries.task_results(connection, task="task")
    assert (result.n_runs, result.n_passed, result.n_errors) == (8, 5, 3)
    assert len(queries.verdicts(connection, task="task", limit=1000)) == 3  # what a client gets is capped

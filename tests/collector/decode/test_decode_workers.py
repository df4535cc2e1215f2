"""Decode workers (collector/decode/pool.py): requests decoded in worker processes are stored exactly as
those decoded in the server's process, bad input is answered the same way, and a worker that dies, or
a server killed outright, loses nothing and leaves nothing behind."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import signal
import time
import urllib.request
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from collector.decode._warm_up import WARM_UP_BODY
from collector.decode.decoded import UndecodableRequest
from collector.decode.pool import Preparer, auto_workers, cpu_quota
from collector.decode.prepare import prepare_request
from tests._otel import exporter
from tests._otlp import new_span_id, new_trace_id, post_json, request, span
from tests._raw import GrpcSender
from tests._raw import request as raw_request
from tests._server import ServeProcess

WORKER = ("--decode-workers", "1")


def _metrics(server: ServeProcess) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def _wait_for(server: ServeProcess, name: str, at_least: float, timeout_s: float = 60.0) -> dict[str, float]:
    deadline = time.monotonic() + timeout_s
    while True:
        metrics = _metrics(server)
        if metrics.get(name, 0.0) >= at_least:
            return metrics
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} stayed below {at_least}: {metrics.get(name)}\n{server.log()}")
        time.sleep(0.1)


def _workers_of(pid: int) -> list[int]:
    """The server's decode workers (its spawned children, not multiprocessing's resource tracker)."""
    found = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        command = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
        if b"spawn_main" in command and b"resource_tracker" not in command:
            found.append(int(child))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _agent_run(tracer: trace.Tracer, task: str) -> None:
    with tracer.start_as_current_span(
        "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent", "tracescore.task.id": task}
    ):
        for name, arguments in (
            ("lookup_order", '{"order_id": "A-1", "note": "café ✓"}'),
            ("refund", "not json"),
        ):
            with tracer.start_as_current_span(
                f"execute_tool {name}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.arguments": arguments,
                    "gen_ai.tool.call.id": f"call-{name}",
                },
            ) as tool:
                if name == "refund":
                    tool.set_status(trace.Status(trace.StatusCode.ERROR, "refused"))


def test_spans_decoded_in_a_worker_are_stored_as_in_the_servers_process(tmp_path: Path) -> None:
    # One SDK, two exporters: the same spans to a server with a worker and to one without.
    with_worker = ServeProcess(tmp_path / "worker.duckdb", extra_args=WORKER).start()
    in_process = ServeProcess(tmp_path / "inline.duckdb", extra_args=("--decode-workers", "0")).start()
    try:
        with_worker.wake_decode_workers()
        _wait_for(with_worker, "tracescore_decode_workers_ready", 1)
        provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
        provider.add_span_processor(BatchSpanProcessor(exporter(with_worker, "grpc")))
        provider.add_span_processor(BatchSpanProcessor(exporter(in_process, "http")))
        tracer = provider.get_tracer("tests.workers")
        for task in ("t1", "t2", "t3"):
            _agent_run(tracer, task)
        provider.shutdown()
        worker_metrics = _wait_for(with_worker, "tracescore_runs_completed_total", 3)
        inline_metrics = _wait_for(in_process, "tracescore_runs_completed_total", 3)
        assert worker_metrics['tracescore_requests_decoded_total{where="worker"}'] >= 1
        assert worker_metrics['tracescore_requests_decoded_total{where="server"}'] == 1  # the waking request
        assert worker_metrics["tracescore_decode_workers"] == 1
        assert inline_metrics['tracescore_requests_decoded_total{where="worker"}'] == 0
        assert inline_metrics["tracescore_decode_workers"] == 0
    finally:
        assert with_worker.stop() == 0, with_worker.log()
        assert in_process.stop() == 0, in_process.log()
    for sql in (
        "SELECT * EXCLUDE (ingest_seq, received_at) FROM spans ORDER BY span_id",
        "SELECT * EXCLUDE (ingest_seq) FROM executions ORDER BY span_id",
        "SELECT * EXCLUDE (min_seq, max_seq, completed_at) FROM run_traces ORDER BY run_id",
    ):
        stored = with_worker.query(sql)
        assert stored == in_process.query(sql)
        assert stored
    arguments = with_worker.query("SELECT tool_name, arguments_raw, error FROM executions ORDER BY tool_name")
    assert arguments[0][0] == "lookup_order" and arguments[-1] == ("refund", "not json", True)


def test_bad_requests_get_the_same_answers_from_a_worker(tmp_path: Path) -> None:
    server = ServeProcess(tmp_path / "bad.duckdb", extra_args=WORKER).start()
    sender = GrpcSender(server.grpc_endpoint)
    try:
        server.wake_decode_workers()
        _wait_for(server, "tracescore_decode_workers_ready", 1)
        garbage = sender.send(b"\xff\xff\xff not protobuf")
        assert (garbage.kind, garbage.code) == ("refused", "INVALID_ARGUMENT")
        assert garbage.message == _undecodable_message(b"\xff\xff\xff not protobuf")
        trace_id = new_trace_id()
        good = span(trace_id, new_span_id(), "kept")
        bad = span("0" * 32, new_span_id(), "zero trace id")
        status, answer = post_json(server.http_url, request([good, bad]))
        assert status == 200
        assert answer["partialSuccess"]["rejectedSpans"] == "1"
        assert "trace_id must be 16 bytes and not all zero" in answer["partialSuccess"]["errorMessage"]
        metrics = _metrics(server)
        assert metrics['tracescore_requests_decoded_total{where="worker"}'] == 2
        assert metrics["tracescore_requests_invalid_total"] == 1
        assert metrics["tracescore_spans_rejected_total"] == 1
    finally:
        sender.close()
        assert server.stop() == 0, server.log()
    assert server.query("SELECT name FROM spans") == [("kept",)]


def _undecodable_message(body: bytes) -> str:
    with pytest.raises(UndecodableRequest) as raised:
        prepare_request(body, "protobuf")
    return str(raised.value)


def test_a_worker_that_dies_loses_no_request_and_is_replaced(tmp_path: Path) -> None:
    server = ServeProcess(tmp_path / "die.duckdb", extra_args=WORKER).start()
    assert server.process is not None
    sender = GrpcSender(server.grpc_endpoint)
    sent: list[str] = []
    try:
        server.wake_decode_workers()
        _wait_for(server, "tracescore_decode_workers_ready", 1)
        (worker,) = _workers_of(server.process.pid)
        os.kill(worker, signal.SIGKILL)
        for i in range(6):
            body, names = raw_request([f"after-kill-{i}-{n}" for n in range(50)])
            assert sender.send(body).kind == "ok"
            sent.extend(names)
        metrics = _wait_for(server, "tracescore_decode_worker_restarts_total", 1)
        assert metrics["tracescore_decode_worker_restarts_total"] == 1
        _wait_for(server, "tracescore_decode_workers_ready", 1)
        (replacement,) = _workers_of(server.process.pid)
        assert replacement != worker
        before = _metrics(server)['tracescore_requests_decoded_total{where="worker"}']
        body, names = raw_request([f"new-worker-{n}" for n in range(50)])
        assert sender.send(body).kind == "ok"
        sent.extend(names)
        assert _metrics(server)['tracescore_requests_decoded_total{where="worker"}'] == before + 1
        assert "a decode worker died" in server.log()
    finally:
        sender.close()
        assert server.stop() == 0, server.log()
    assert sorted(n for (n,) in server.query("SELECT name FROM spans")) == sorted(sent)


def test_workers_end_with_a_server_killed_outright(tmp_path: Path) -> None:
    server = ServeProcess(tmp_path / "kill.duckdb", extra_args=WORKER).start()
    assert server.process is not None
    server.wake_decode_workers()
    _wait_for(server, "tracescore_decode_workers_ready", 1)
    workers = _workers_of(server.process.pid)
    assert workers
    server.kill()  # SIGKILL: the server cannot stop them itself
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def _processes_with(marker: str) -> list[int]:
    """Live processes whose environment holds this marker (a server's workers inherit it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_workers_end_with_a_server_killed_while_they_start(tmp_path: Path) -> None:
    # Killed as soon as it listens, the server is gone before its worker has started: the worker,
    # whose parent is then already init, must still see it and go.
    marker = f"TRACESCORE_TEST_RUN={os.urandom(8).hex()}"
    name, value = marker.split("=")
    server = ServeProcess(tmp_path / "early.duckdb", extra_args=WORKER, env={name: value}).start()
    assert server.process is not None
    server.wake_decode_workers()  # workers start with the first request
    server.kill()
    deadline = time.monotonic() + 15
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(marker) == []


def test_recognised_spans_cross_the_process_boundary_unchanged() -> None:
    # What a worker sends back is pickled compactly (class and field values): it must load equal.
    document = request(
        [
            span(
                new_trace_id(),
                new_span_id(),
                "execute_tool lookup",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.arguments": '{"id": 12345678901234567890123, "x": [1.5, null]}',
                    "gen_ai.agent.name": "shop",
                },
            ),
            span(
                new_trace_id(),
                new_span_id(),
                "chat",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "tool_call", '
                    '"id": "c1", "name": "lookup", "arguments": {"id": 1}}]}]',
                },
            ),
        ]
    )
    prepared = prepare_request(json.dumps(document).encode(), "json")
    loaded = pickle.loads(pickle.dumps(prepared, protocol=pickle.HIGHEST_PROTOCOL))
    assert loaded.spans.keys == prepared.spans.keys
    assert loaded.spans.recognised == prepared.spans.recognised
    assert loaded.spans.rows.equals(prepared.spans.rows)
    execution = loaded.spans.recognised[0].execution
    assert execution is not None and execution.arguments.value["id"] == 12345678901234567890123
    assert loaded.spans.recognised[1].requests[0].tool_name == "lookup"


def test_auto_workers_follow_a_containers_cpu_quota(tmp_path: Path) -> None:
    # In a container the affinity mask shows every host core; the quota says what may be used.
    cores = len(os.sched_getaffinity(0))
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("max 100000\n")
    assert cpu_quota(v2) is None
    assert auto_workers(v2) == min(4, cores - 1)
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert cpu_quota(v2) == 1.5
    assert auto_workers(v2) == min(4, cores - 1, 1)
    (v2 / "cpu.max").write_text("50000 100000\n")  # half a CPU: the server alone
    assert auto_workers(v2) == 0
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpu_quota(v1) is None
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    assert cpu_quota(v1) == 1.0
    assert auto_workers(v1) == 0
    assert cpu_quota(tmp_path / "missing") is None


def test_the_cpu_quota_is_the_least_of_the_process_own_cgroup_and_its_parents(tmp_path: Path) -> None:
    # Without a cgroup namespace the mount's root is the host's: the container's quota is on the
    # process's own path (/proc/self/cgroup), and a parent's may be lower still.
    membership = tmp_path / "cgroup"
    membership.write_text("0::/kubepods/pod1/ctr\n")
    mount = tmp_path / "mnt"
    own, pod = mount / "kubepods" / "pod1" / "ctr", mount / "kubepods" / "pod1"
    own.mkdir(parents=True)
    (mount / "cpu.max").write_text("max 100000\n")
    (own / "cpu.max").write_text("300000 100000\n")
    assert cpu_quota(mount, membership) == 3.0
    (pod / "cpu.max").write_text("200000 100000\n")
    assert cpu_quota(mount, membership) == 2.0
    assert auto_workers(mount, membership) == min(4, len(os.sched_getaffinity(0)) - 1, 1)
    # cgroup v1: the cpu controller's own line names the path.
    membership.write_text("4:cpu,cpuacct:/docker/abc\n0::/\n")
    v1 = tmp_path / "v1" / "cpu" / "docker" / "abc"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("150000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert cpu_quota(tmp_path / "v1", membership) == 1.5


def test_an_idle_server_holds_no_worker_until_its_first_request(tmp_path: Path) -> None:
    # Each worker is ~66 MB resident: a sidecar that has received nothing keeps none (issue 32's idle
    # RSS target); the first request starts them, and is itself prepared in the server's process.
    server = ServeProcess(tmp_path / "idle.duckdb", extra_args=WORKER).start()
    assert server.process is not None
    try:
        time.sleep(1.0)  # time enough for a worker spawned at start to show (they did, ~0.3 s)
        assert _workers_of(server.process.pid) == []
        assert _metrics(server)["tracescore_decode_workers_ready"] == 0
        server.wake_decode_workers()
        metrics = _wait_for(server, "tracescore_decode_workers_ready", 1)
        assert metrics['tracescore_requests_decoded_total{where="server"}'] == 1
        assert len(_workers_of(server.process.pid)) == 1
    finally:
        assert server.stop() == 0, server.log()


def test_workers_stop_after_an_idle_spell_and_start_again_with_the_next_request() -> None:
    async def scenario() -> tuple[list[int], list[int], list[int], int]:
        preparer = Preparer(1, idle_retire_s=1.5)
        try:
            await preparer.prepare(WARM_UP_BODY, "protobuf")  # starts the pool; prepared here
            deadline = time.monotonic() + 60
            while not preparer.ready and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            first = preparer.worker_pids()
            await preparer.prepare(WARM_UP_BODY, "protobuf")  # with the worker
            await asyncio.sleep(1.0)  # under the idle spell: still there
            kept = preparer.worker_pids()
            await asyncio.sleep(1.5)  # past it
            retired = preparer.worker_pids()
            await preparer.prepare(WARM_UP_BODY, "protobuf")
            return first, kept, retired, preparer.prepared_in_workers
        finally:
            preparer.close()

    first, kept, retired, in_workers = asyncio.run(scenario())
    assert len(first) == 1 and kept == first
    assert retired == []
    assert not any(_alive(pid) for pid in first)
    assert in_workers == 1

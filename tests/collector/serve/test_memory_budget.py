"""The memory budget (collector/serve/memory.py): where it comes from, how it is shared, and a real server
refusing retryably, over both protocols, once the memory it holds passes 90 % of it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest

from bench.cgroup import MemoryCgroup, memory_cgroup
from bench.workload import build
from collector.serve.memory import (
    DEFAULT_SIZES,
    MIB,
    SMALLEST_WORKABLE_BYTES,
    Budget,
    Layout,
    Sizes,
    budget,
    container_limit,
    describe,
    layout,
    parse_size,
    sizes,
    too_small,
)
from tests._held import HeldPeak
from tests._otel import stored_rows
from tests._otlp import new_span_id, new_trace_id, request, span
from tests._raw import EXPORT
from tests._server import ServeProcess


@pytest.mark.parametrize(
    ("text", "size"),
    [("512MB", 512 * 1000**2), ("256MiB", 256 * MIB), ("1.5GiB", int(1.5 * 1024**3)), ("1048576", MIB)],
)
def test_sizes_are_read_as_duckdb_reads_them(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "0MB", "-5MB", "12 parsecs"])
def test_a_size_that_is_not_one_is_refused_with_the_reason(text: str) -> None:
    with pytest.raises(ValueError, match=r"size|more than 0"):
        parse_size(text)


def test_the_container_limit_is_read_from_cgroup_v2_and_v1(tmp_path: Path) -> None:
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.max").write_text("268435456\n")
    assert container_limit(v2) == 256 * MIB
    (v2 / "memory.max").write_text("max\n")
    assert container_limit(v2) is None
    v1 = tmp_path / "v1" / "memory"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("536870912\n")
    assert container_limit(tmp_path / "v1") == 512 * MIB
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    assert container_limit(tmp_path / "v1") is None
    assert container_limit(tmp_path / "none") is None


def test_the_container_limit_is_the_least_of_the_process_own_cgroup_and_its_parents(tmp_path: Path) -> None:
    # Without a cgroup namespace the mount's root is the host's (no limit): the container's limit is on
    # the process's own path, which /proc/self/cgroup names; a parent's lower limit binds as well.
    membership = tmp_path / "cgroup"
    membership.write_text("4:memory:/pods/pod-1/app\n3:cpu,cpuacct:/pods/pod-1/app\n0::/\n")
    v1 = tmp_path / "mnt" / "memory"
    (v1 / "pods" / "pod-1" / "app").mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (v1 / "pods" / "pod-1" / "app" / "memory.limit_in_bytes").write_text(f"{512 * MIB}\n")
    assert container_limit(tmp_path / "mnt", membership) == 512 * MIB
    (v1 / "pods" / "pod-1" / "memory.limit_in_bytes").write_text(f"{384 * MIB}\n")
    assert container_limit(tmp_path / "mnt", membership) == 384 * MIB
    membership.write_text("0::/pods/pod-2\n")  # cgroup v2
    v2 = tmp_path / "mnt2"
    (v2 / "pods" / "pod-2").mkdir(parents=True)
    (v2 / "pods" / "pod-2" / "memory.max").write_text(f"{256 * MIB}\n")
    (v2 / "pods" / "memory.max").write_text("max\n")
    assert container_limit(v2, membership) == 256 * MIB
    assert budget("", v2, membership) == Budget(256 * MIB, "container")


def test_a_server_in_a_real_memory_cgroup_takes_its_limit_as_the_budget(tmp_path: Path) -> None:
    # The kernel's own files, not written by the test: a server started inside a memory cgroup of
    # 700 MiB with no --memory-limit reads that limit from its own cgroup's path and says so.
    with memory_cgroup(700 * MIB) as cgroup:
        if not isinstance(cgroup, MemoryCgroup):
            pytest.skip(cgroup.why)
        run = subprocess.run(
            [sys.executable, "-c", "from collector.serve.memory import budget; print(budget(''))"],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=cgroup.preexec,
        )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"Budget(limit_bytes={700 * MIB}, source='container')", run.stdout


def test_the_flag_wins_over_the_container_and_neither_means_no_budget(tmp_path: Path) -> None:
    (tmp_path / "memory.max").write_text(f"{1024 * MIB}\n")
    assert budget("300MB", tmp_path) == Budget(300 * 1000**2, "--memory-limit")
    assert budget("", tmp_path) == Budget(1024 * MIB, "container")
    assert budget("", tmp_path / "elsewhere") is None


def test_the_budget_is_shared_between_duckdb_the_retained_traces_and_the_decode_workers() -> None:
    small, mid, large = (Budget(n * MIB, "container") for n in (384, 488, 2048))
    # Decode workers first, where they fit beside the server (110 MiB), DuckDB's floor (96), the
    # retained traces' floor (4) and work in flight (64) under the 90 % refusal mark: 384 MiB holds none
    # (decoding in-process; 71 MiB of room, a worker takes 72), 488 MiB (512 MB) two.
    assert small.workers_allowed(4) == 0 and mid.workers_allowed(4) == 2 and large.workers_allowed(4) == 4
    assert mid.workers_allowed(1) == 1  # never more than wanted
    assert Budget(1000 * MIB, "container").workers_allowed(4) == 4  # room for (900 - 274) // 72 = 8
    # Then, of what the server and the workers leave, 40 % to DuckDB (never under its 96 MiB floor,
    # below which a checkpoint under load ran out of memory) and 10 % to the retained traces.
    assert small.sizes(0) == Sizes(
        duckdb_bytes=int(274 * MIB * 0.4), duckdb_threads=1, retained_trace_bytes=int(274 * MIB * 0.1)
    )
    assert mid.sizes(1).duckdb_bytes == int(306 * MIB * 0.4)
    assert mid.sizes(1).retained_trace_bytes == int(306 * MIB * 0.1)
    assert large.sizes(4).duckdb_bytes == int((2048 - 110 - 4 * 72) * MIB * 0.4)
    assert Budget(300 * MIB, "--memory-limit").sizes(0).duckdb_bytes == 96 * MIB  # (300 - 110) * 0.4 < 96
    assert large.sizes(4).duckdb_threads is None
    assert small.refuse_above_bytes == int(384 * MIB * 0.9)
    # The write-ahead log is checkpointed at a quarter of DuckDB's memory, between 16 and 128 MiB.
    assert small.sizes(0).wal_trigger_bytes == int(int(274 * MIB * 0.4) / 4)
    assert large.sizes(4).wal_trigger_bytes == 128 * MIB
    tiny = Budget(64 * MIB, "--memory-limit").sizes(0)
    assert tiny.duckdb_bytes == 96 * MIB and tiny.retained_trace_bytes == 4 * MIB  # the floors


def test_the_budget_decides_the_mode_and_says_so() -> None:
    small = layout(Budget(384 * MIB, "--memory-limit"), wanted_workers=1)
    assert small.workers == 0 and small.sizes.duckdb_threads == 1
    line = describe(Budget(384 * MIB, "--memory-limit"), small)
    assert line.startswith("memory budget 384 MiB (--memory-limit): decoding in this process, DuckDB 109 MiB")
    assert "refused retryably above 345 MiB" in line
    roomy = layout(Budget(2048 * MIB, "container"), wanted_workers=1)
    assert roomy.workers == 1 and roomy.sizes.duckdb_threads is None
    unbudgeted = layout(None, wanted_workers=1)
    assert unbudgeted == Layout(1, DEFAULT_SIZES)
    assert describe(None, unbudgeted).startswith("no memory budget")


def test_a_budget_too_small_to_work_under_load_is_named_at_start() -> None:
    # Below the server, DuckDB's floor and work in flight (under the refusal mark), load is refused for
    # as long as it lasts: serve says so in one line (a warning; it still starts).
    problem = too_small(Budget(300 * 1000**2, "--memory-limit"))
    assert problem is not None and "286 MiB" in problem and "DuckDB at least 96" in problem
    assert too_small(Budget(SMALLEST_WORKABLE_BYTES, "container")) is None
    assert too_small(Budget(384 * MIB, "--memory-limit")) is None  # the smallest documented budget


def test_without_a_budget_the_sizes_are_a_sidecars() -> None:
    assert sizes(None, 1) == DEFAULT_SIZES
    assert DEFAULT_SIZES.duckdb_bytes == 128 * MIB and DEFAULT_SIZES.retained_trace_bytes <= 32 * MIB
    assert DEFAULT_SIZES.wal_trigger_bytes == 32 * MIB


def _post(url: str, body: bytes) -> tuple[int, dict[str, str], dict[str, object]]:
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"{}")


def test_a_server_over_its_budget_refuses_retryably_and_stores_nothing(tmp_path: Path) -> None:
    # 64 MB is less than a started server's resident memory: every request finds the budget spent.
    trace = new_trace_id()
    body = json.dumps(request([span(trace, new_span_id(), "invoke_agent a")])).encode()
    server = ServeProcess(tmp_path / "tight.duckdb", extra_args=("--memory-limit", "64MB")).start()
    try:
        status, headers, answer = _post(server.http_url, body)
        assert status == 503 and headers.get("Retry-After") == "1", (status, headers)
        assert "memory budget nearly spent" in json.dumps(answer) and "--memory-limit" in json.dumps(answer)
        with grpc.insecure_channel(server.grpc_endpoint) as channel:
            export = channel.unary_unary(EXPORT, request_serializer=bytes, response_deserializer=bytes)
            with pytest.raises(grpc.RpcError) as refused:
                export(b"", timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "memory budget" in (refused.value.details() or "")
    finally:
        assert server.stop() == 0, server.log()
    assert stored_rows(server, "SELECT count(*) AS n FROM spans") == [{"n": 0}]

    roomy = ServeProcess(tmp_path / "roomy.duckdb", extra_args=("--memory-limit", "4GB")).start()
    try:
        assert _post(roomy.http_url, body)[0] == 200
    finally:
        assert roomy.stop() == 0, roomy.log()
    assert stored_rows(roomy, "SELECT count(*) AS n FROM spans") == [{"n": 1}]


def test_under_load_a_budget_is_honoured_retryably_and_nothing_is_lost(tmp_path: Path) -> None:
    # The smallest workable budget (the server holds ~110 MiB once it took spans, DuckDB its floor), so
    # the load (30 k spans from four exporters, as fast as they are answered) takes it towards the
    # refusal mark (90 %); refusals, if any, must be retryable, memory held must stay under the
    # budget, and every span sent must end up stored.
    limit = SMALLEST_WORKABLE_BYTES
    workload = build(5_000, seed=7)
    server = ServeProcess(tmp_path / "budget.duckdb", extra_args=("--memory-limit", f"{limit}B")).start()
    assert server.process is not None
    held = HeldPeak(server.process.pid, every_s=0.05)
    refusals: list[tuple[grpc.StatusCode, bool]] = []
    pending = list(range(len(workload.requests)))
    lock = threading.Lock()

    def send() -> None:
        with grpc.insecure_channel(server.grpc_endpoint) as channel:
            export = channel.unary_unary(EXPORT, request_serializer=bytes, response_deserializer=bytes)
            while True:
                with lock:
                    if not pending:
                        return
                    index = pending.pop()
                deadline = time.monotonic() + 120
                while True:
                    try:
                        export(workload.requests[index], timeout=30)
                        break
                    except grpc.RpcError as exc:
                        metadata = dict(exc.trailing_metadata() or ())  # type: ignore[attr-defined]
                        refusals.append((exc.code(), "google.rpc.retryinfo-bin" in metadata))  # type: ignore[attr-defined]
                        assert time.monotonic() < deadline, "refused for two minutes"
                        time.sleep(0.2)

    try:
        with held:
            senders = [threading.Thread(target=send) for _ in range(4)]
            for sender in senders:
                sender.start()
            for sender in senders:
                sender.join()
    finally:
        assert server.stop() == 0, server.log()
    peak = held.bytes
    print(f"\npeak held {peak / 1e6:.0f} MB of {limit / 1e6:.0f} MB, {len(refusals)} refusals")
    assert all(code == grpc.StatusCode.UNAVAILABLE and retry for code, retry in refusals), refusals[:5]
    assert peak < limit, f"peak held {peak / 1e6:.0f} MB over the {limit / 1e6:.0f} MB budget"
    assert stored_rows(server, "SELECT count(DISTINCT span_id) AS n FROM spans") == [{"n": workload.spans}]


def test_a_memory_limit_that_is_no_size_stops_serve_with_one_line(tmp_path: Path) -> None:
    serve = [sys.executable, "-m", "collector.cli", "serve", "--db", str(tmp_path / "x.duckdb")]
    run = subprocess.run(
        [*serve, "--memory-limit", "lots"], check=False, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.endswith("--memory-limit: 'lots' is not a size: write e.g. 512MB, 1GiB or a number of bytes")
    assert "Traceback" not in run.stderr and not (tmp_path / "x.duckdb").exists()

"""The memory budget (collector/serve/memory.py): where it comes from, how it is shared, and a real server
refusing retryably, over both protocols, once its resident memory passes 90 % of it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest

from collector.serve.memory import MIB, Budget, budget, container_limit, parse_size
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


def test_the_flag_wins_over_the_container_and_neither_means_no_budget(tmp_path: Path) -> None:
    (tmp_path / "memory.max").write_text(f"{1024 * MIB}\n")
    assert budget("300MB", tmp_path) == Budget(300 * 1000**2, "--memory-limit")
    assert budget("", tmp_path) == Budget(1024 * MIB, "container")
    assert budget("", tmp_path / "elsewhere") is None


def test_the_budget_is_shared_between_duckdb_and_the_decode_workers() -> None:
    small, large = Budget(300 * MIB, "container"), Budget(2048 * MIB, "container")
    assert small.duckdb_bytes == 120 * MIB and small.refuse_above_bytes == 270 * MIB
    assert small.workers_allowed(4) == 0  # 300 MiB holds the server and DuckDB's share only
    assert large.workers_allowed(4) == 4
    assert Budget(64 * MIB, "--memory-limit").duckdb_bytes == 64 * MIB  # DuckDB's floor


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

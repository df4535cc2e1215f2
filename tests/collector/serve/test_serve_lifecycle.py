"""The serve process's life: stop, restart, crash, late spans, one process per file, read-only SQL."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from collector.store.database import open_writer
from collector.store.writer import Writer, WriterSettings
from scoring import ensure_verdict_schema, store_verdicts
from scoring.verdict.record import error_verdict
from tests._otlp import new_span_id, new_trace_id, post_json, request, span
from tests._server import ServeProcess

TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}


def _agent_trace(trace_id: str, tools: int = 1) -> tuple[str, list[dict[str, object]]]:
    root = new_span_id()
    spans = [span(trace_id, root, "invoke_agent shop", attributes=AGENT)]
    spans += [
        span(trace_id, new_span_id(), "execute_tool lookup", parent=root, attributes=TOOL)
        for _ in range(tools)
    ]
    return root, spans


def _tracescore(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_sigterm_completes_open_runs_and_exits_zero(tmp_path: Path) -> None:
    server = ServeProcess(tmp_path / "t.duckdb", extra_args=("--grace-seconds", "600")).start()
    trace_id = new_trace_id()
    root, spans = _agent_trace(trace_id, tools=2)
    assert post_json(server.http_url, request(spans)) == (200, {})
    assert server.stop() == 0
    assert server.query("SELECT run_id, status, version, n_executions FROM runs") == [
        (root, "complete", 1, 2)
    ]
    assert server.query("SELECT count(*) FROM executions WHERE run_id = ?", [root]) == [(2,)]


def test_late_span_reopens_the_run_and_bumps_its_version(server: ServeProcess) -> None:
    trace_id = new_trace_id()
    root, spans = _agent_trace(trace_id)
    post_json(server.http_url, request(spans))
    time.sleep(1.5)  # grace is 0.3 s: the trace completes
    late = span(trace_id, new_span_id(), "execute_tool lookup", parent=root, attributes=TOOL)
    assert post_json(server.http_url, request([late]))[0] == 200
    time.sleep(1.5)
    assert server.stop() == 0
    assert server.query("SELECT version, status, n_executions FROM run_traces") == [(2, "complete", 2)]
    assert server.query("SELECT count(*) FROM executions") == [(2,)]


def test_acknowledged_spans_survive_sigkill_and_their_runs_complete_after_restart(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    server = ServeProcess(db, extra_args=("--grace-seconds", "600")).start()
    trace_id = new_trace_id()
    root, spans = _agent_trace(trace_id, tools=3)
    assert post_json(server.http_url, request(spans))[0] == 200
    server.kill()  # SIGKILL: acknowledged spans are in the WAL; the run was never completed

    restarted = ServeProcess(db).start()
    assert restarted.stop() == 0
    assert restarted.query("SELECT count(*) FROM spans") == [(4,)]
    assert restarted.query("SELECT run_id, n_executions, version FROM runs") == [(root, 3, 1)]


def test_a_second_serve_on_the_same_file_fails_at_once_naming_the_holder(server: ServeProcess) -> None:
    started = time.monotonic()
    result = _tracescore("serve", "--db", str(server.db), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
    assert result.returncode == 2
    assert time.monotonic() - started < 20
    assert f"PID {server.process.pid}" in result.stderr or f"process {server.process.pid}" in result.stderr
    assert "Traceback" not in result.stderr
    assert server.process.poll() is None  # the first one keeps serving


@pytest.mark.parametrize("busy", ["grpc", "http"])
def test_a_port_in_use_is_one_line_naming_the_flag_and_leaves_no_file(tmp_path: Path, busy: str) -> None:
    """Issue #20: gRPC's own `add_port.cc` line, a message naming neither flag, and an empty database
    file left behind, were what a busy port gave."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = f"127.0.0.1:{holder.getsockname()[1]}"
        addresses = {"grpc": "127.0.0.1:0", "http": "127.0.0.1:0", busy: taken}
        db = tmp_path / "never.duckdb"
        result = _tracescore(
            "serve", "--db", str(db), "--grpc", addresses["grpc"], "--http", addresses["http"]
        )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert taken in lines[0] and f"--{busy} HOST:PORT" in lines[0] and "tracescore doctor" in lines[0]
    assert "add_port" not in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_sql_reads_and_refuses_writes(tmp_path: Path) -> None:
    server = ServeProcess(tmp_path / "t.duckdb").start()
    _, spans = _agent_trace(new_trace_id(), tools=2)
    post_json(server.http_url, request(spans))
    # While the server holds the file, the CLI asks the server (found through <db>.api.json).
    while_serving = _tracescore(
        "sql", "--db", str(server.db), "--format", "csv", "SELECT count(*) AS n FROM spans"
    )
    assert while_serving.returncode == 0, while_serving.stderr
    assert while_serving.stdout.splitlines() == ["n", "3"]
    refused_live = _tracescore("sql", "--db", str(server.db), "DELETE FROM spans")
    assert refused_live.returncode == 2 and "read-only" in refused_live.stderr
    server.stop()
    assert not server.db.with_name(server.db.name + ".api.json").exists()

    ok = _tracescore(
        "sql",
        "--db",
        str(server.db),
        "--format",
        "csv",
        "SELECT tool_name, count(*) AS n FROM executions GROUP BY 1",
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines() == ["tool_name,n", "lookup,2"]
    for statement in (
        "DELETE FROM spans",
        "COPY spans TO 'x.csv'",
        "SELECT 1; SELECT 2",
        "ATTACH 'y.duckdb'",
    ):
        refused = _tracescore("sql", "--db", str(server.db), statement)
        assert refused.returncode == 2, statement
        assert refused.stderr.startswith("tracescore: ") and "Traceback" not in refused.stderr
    outside = _tracescore("sql", "--db", str(server.db), "SELECT * FROM read_csv('/etc/passwd')")
    assert outside.returncode != 0 and "Traceback" not in outside.stderr
    assert server.query("SELECT count(*) FROM spans") == [(3,)]


def test_settings_come_from_the_environment_and_flags_win(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "collector.cli", "serve", "--db", str(tmp_path / "env.duckdb")],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TRACESCORE_GRACE_SECONDS": "not-a-number"},
    )
    assert result.returncode == 2
    assert "TRACESCORE_GRACE_SECONDS" in result.stderr
    remote = _tracescore("serve", "--db", str(tmp_path / "r.duckdb"), "--grpc", "0.0.0.0:4317")
    assert remote.returncode == 2 and "loopback" in remote.stderr


def test_a_resend_after_a_restart_is_not_stored_twice(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    trace_id = new_trace_id()
    _, spans = _agent_trace(trace_id, tools=2)
    first = ServeProcess(db).start()
    assert post_json(first.http_url, request(spans))[0] == 200
    assert first.stop() == 0  # the trace is completed and leaves memory with the process

    second = ServeProcess(db).start()
    assert post_json(second.http_url, request(spans))[0] == 200  # the client's retry of a lost answer
    assert second.stop() == 0
    assert second.query("SELECT count(*), count(DISTINCT span_id) FROM spans") == [(3, 3)]
    assert second.query("SELECT count(*) FROM executions") == [(2,)]


def _metric(server: ServeProcess, name: str) -> float:
    base = f"http://127.0.0.1:{server.http_port}"
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            sample, _, value = line.rpartition(" ")
            if sample == name:
                return float(value)
    raise AssertionError(f"{name} is not in /metrics")


def test_checkpoints_and_the_time_they_take_are_in_the_metrics(tmp_path: Path) -> None:
    # While DuckDB checkpoints, writes and run completions wait: operators see how often and how long.
    server = ServeProcess(tmp_path / "c.duckdb", env={"TRACESCORE_CHECKPOINT_SECONDS": "1"}).start()
    try:
        _, spans = _agent_trace(new_trace_id(), tools=3)
        assert post_json(server.http_url, request(spans)) == (200, {})
        deadline = time.monotonic() + 30
        while _metric(server, "tracescore_checkpoints_total") < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _metric(server, "tracescore_checkpoints_total") >= 2
        total = _metric(server, "tracescore_checkpoint_seconds_total")
        assert 0 < _metric(server, "tracescore_last_checkpoint_seconds") <= total
    finally:
        assert server.stop() == 0, server.log()


def test_commits_during_checkpoints_go_to_the_other_partition_and_are_timed_in_the_metrics(
    tmp_path: Path,
) -> None:
    """Issue 17: the writer appends to one partition of each table while a checkpoint writes the other,
    and /metrics shows how long its transactions that overlapped a checkpoint took. Requests are sent
    until one commit overlapped a checkpoint; every acknowledged span is then stored once, read through
    the `spans` view, and the checkpoints have moved the writer between the two partitions."""
    server = ServeProcess(tmp_path / "p.duckdb", env={"TRACESCORE_CHECKPOINT_SECONDS": "1"}).start()
    sent = 0
    try:
        deadline = time.monotonic() + 60
        # Sending across two switches at least, so that both partitions get spans.
        while (
            _metric(server, "tracescore_commits_during_checkpoints_total") < 1
            or _metric(server, "tracescore_checkpoints_total") < 3
        ):
            assert time.monotonic() < deadline, "no commit overlapped a checkpoint in 60 s"
            _, spans = _agent_trace(new_trace_id(), tools=3)
            assert post_json(server.http_url, request(spans)) == (200, {})
            sent += len(spans)
        assert _metric(server, "tracescore_longest_commit_during_checkpoint_seconds") > 0
        assert _metric(server, "tracescore_checkpoints_total") >= 1
    finally:
        assert server.stop() == 0, server.log()
    assert server.query("SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans") == [(sent, sent)]
    in_each = server.query("SELECT (SELECT count(*) FROM spans_p0), (SELECT count(*) FROM spans_p1)")
    assert all(count > 0 for count in in_each[0]), in_each


def _score_over_api(server: ServeProcess, run_id: str) -> list[dict[str, object]]:
    spec = {"name": "looked-up", "expected_tools": ["lookup"]}
    body = json.dumps({"specs": [spec], "run": run_id}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{server.http_port}/api/v1/score",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as answer:
        verdicts: list[dict[str, object]] = json.loads(answer.read())
    return verdicts


def test_verdicts_stored_through_the_scoring_api_follow_the_partition_switch(tmp_path: Path) -> None:
    """`POST /api/v1/score` stores its verdicts into the partition no checkpoint is writing, as online
    scoring does: it once always wrote `verdicts_p0`, so a checkpoint writing that partition held the
    request's commit (and the writer's commits behind it). Runs are scored through the API across several
    checkpoints; both partitions must end up holding some of their verdicts."""
    server = ServeProcess(tmp_path / "v.duckdb", env={"TRACESCORE_CHECKPOINT_SECONDS": "1"}).start()
    scored = 0
    try:
        deadline = time.monotonic() + 60
        while _metric(server, "tracescore_checkpoints_total") < 3 or scored < 4:
            assert time.monotonic() < deadline, "three checkpoints did not happen in 60 s"
            root, spans = _agent_trace(new_trace_id())
            assert post_json(server.http_url, request(spans)) == (200, {})
            while not (verdicts := _score_over_api(server, root)):  # the run completes after its grace
                assert time.monotonic() < deadline, f"run {root} was never scored"
                time.sleep(0.1)
            assert [v["label"] for v in verdicts] == ["pass"]
            scored += 1
            time.sleep(0.3)
    finally:
        assert server.stop() == 0, server.log()
    in_each = server.query("SELECT (SELECT count(*) FROM verdicts_p0), (SELECT count(*) FROM verdicts_p1)")
    assert sum(in_each[0]) == scored
    assert all(count > 0 for count in in_each[0]), in_each


def test_a_timed_checkpoint_refused_while_scoring_writes_is_retried_soon(tmp_path: Path) -> None:
    # DuckDB refuses a plain CHECKPOINT while another cursor's transaction that replaced rows is open.
    # Online scoring once stored verdicts that way (it deletes and inserts now); any other upsert still
    # can, and the timer must not give up until the next interval: it is counted and retried in 0.2 s.
    connection = open_writer(tmp_path / "d.duckdb")
    writer = Writer(connection, WriterSettings(checkpoint_interval_s=0.3))
    scorer = connection.cursor()
    try:
        scorer.execute("INSERT INTO tracescore_state VALUES ('held', 0)")
        scorer.execute("BEGIN")
        # As storing verdicts does (a plain insert would not stop a checkpoint; a replace does).
        scorer.execute("INSERT OR REPLACE INTO tracescore_state VALUES ('held', 1)")
        writer.start()
        deadline = time.monotonic() + 10
        while writer.stats.checkpoints_deferred < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert writer.stats.checkpoints_deferred >= 3  # retried every 0.2 s, not once per interval
        assert writer.stats.checkpoints == 0
        scorer.execute("COMMIT")
        deadline = time.monotonic() + 10
        while writer.stats.checkpoints == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert writer.stats.checkpoints >= 1
        assert connection.execute("SELECT value FROM tracescore_state WHERE key = 'held'").fetchone() == (1,)
    finally:
        writer.stop()
        scorer.close()
        connection.close()


def test_storing_a_verdict_again_does_not_hold_a_checkpoint_off(tmp_path: Path) -> None:
    """Online scoring's cursor replaces a run's verdict (a re-completed run, a restarted scorer) while
    the writer checkpoints: the replacement deletes and inserts, so DuckDB (>= 1.5) does not refuse the
    checkpoint as it refuses one while an upsert (a MERGE) is open, and the verdict is stored once."""
    connection = open_writer(tmp_path / "v.duckdb")
    ensure_verdict_schema(connection)
    scorer = connection.cursor()
    first = error_verdict("run-1", "trace-1", "task", "spec", "f" * 16, "default", 1, "first")
    again = error_verdict("run-1", "trace-1", "task", "spec", "f" * 16, "default", 1, "again")
    try:
        store_verdicts(scorer, [first])
        scorer.begin()
        store_verdicts(scorer, [again], in_transaction=True)  # and the transaction left open
        connection.execute("CHECKPOINT")  # refused ("other write transactions active") with an upsert
        scorer.commit()
        rows = connection.execute("SELECT reason FROM verdicts").fetchall()
        assert rows == [("scoring failed: again",)]
    finally:
        scorer.close()
        connection.close()

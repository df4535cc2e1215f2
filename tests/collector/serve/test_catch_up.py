"""Runs completed but unscored when a server stopped are scored when the next one starts with specs.

Completion commits before online scoring stores the verdict: a SIGKILL in between leaves complete runs
without verdicts, and so does a server that ran without --specs. End to end, through the real SDK
exporter and `tracescore serve`, both ways of leaving runs unscored are followed by a restart with
specs, and the verdicts are read from the HTTP API; no `tracescore score` is run. In process, the
search itself: which runs it finds (a missing (run, spec, version) verdict that a spec's `select`
wants) and where it does not look (before the window, after this start).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from collector.serve._catch_up import WINDOW_S, unscored_runs
from collector.store.database import open_writer
from scoring import Spec, ensure_verdict_schema, store_verdicts
from scoring.verdict.record import error_verdict
from tests._otel import provider
from tests._server import ServeProcess
from tests.collector.serve.test_online import TOOL, Agent, get, verdicts, wait_for

SPECS = f"name: uses-cutoff\nexpected_tools: [{TOOL}]\n"
# The test plugin's `slow` spec sleeps 1.5 s per run: verdicts are stored well after completion.
SLOW_SPECS = f"name: slow\nexpected_tools: [{TOOL}]\n---\nname: uses-cutoff\nexpected_tools: [{TOOL}]\n"
PLUGIN = ("--plugin", "tests.plugins_for_tests")


def _complete(server: ServeProcess, task: str, run_ids: set[str]) -> bool:
    runs = get(server, f"/api/v1/runs?task={task}")
    return {r["run_id"] for r in runs if r["status"] == "complete"} >= run_ids


def _send(server: ServeProcess, task: str, count: int, protocol: str = "grpc") -> list[str]:
    tracer_provider = provider(server, protocol)
    try:
        agent = Agent(tracer_provider)
        return [agent.run(task, [(TOOL, {"region": "north"})]).run_id for _ in range(count)]
    finally:
        tracer_provider.shutdown()


def _labels(server: ServeProcess, run_ids: list[str]) -> dict[tuple[str, str], tuple[str, int]]:
    return {
        (v["run_id"], v["spec"]): (v["label"], v["run_version"])
        for run_id in run_ids
        for v in verdicts(server, run=run_id)
    }


def test_runs_left_unscored_by_a_sigkill_are_scored_at_the_next_start(tmp_path: Path) -> None:
    (tmp_path / "specs.yaml").write_text(SLOW_SPECS)
    db = tmp_path / "killed.duckdb"
    args = ("--specs", str(tmp_path / "specs.yaml"), *PLUGIN)
    server = ServeProcess(db, extra_args=args).start()
    task = f"catch-up:{uuid.uuid4().hex[:8]}"
    try:
        run_ids = _send(server, task, 3)
        wait_for(lambda: _complete(server, task, set(run_ids)), "the runs completed", server)
    finally:
        server.kill()  # SIGKILL: committed and complete, while the slow scorer still works on them
    # The crash landed where it should: complete runs, no verdict (else this test proves nothing).
    rows = server.query("SELECT run_id, status FROM runs WHERE task_id = ?", [task])
    assert sorted(rows) == sorted((r, "complete") for r in run_ids)
    assert server.query("SELECT count(*) FROM verdicts WHERE task_id = ?", [task]) == [(0,)]

    restarted = ServeProcess(db, extra_args=args).start()
    try:
        expected = {(r, s): ("pass", 1) for r in run_ids for s in ("slow", "uses-cutoff")}
        wait_for(lambda: _labels(restarted, run_ids) == expected, "the catch-up verdicts", restarted)
        assert "3 run(s) completed before this start have no verdict" in restarted.log()
        assert restarted.stop() == 0, restarted.log()
    finally:
        restarted.kill()
    # Each (run, spec, version) once: scored by the catch-up, not also by a re-completion.
    assert restarted.query(
        "SELECT count(*), count(DISTINCT (run_id, spec, run_version)) FROM verdicts WHERE task_id = ?", [task]
    ) == [(6, 6)]


def test_runs_completed_without_specs_are_scored_when_a_restart_brings_specs(tmp_path: Path) -> None:
    db = tmp_path / "late-specs.duckdb"
    bare = ServeProcess(db).start()
    task = f"catch-up:{uuid.uuid4().hex[:8]}"
    try:
        run_ids = _send(bare, task, 2, "http")
        wait_for(lambda: _complete(bare, task, set(run_ids)), "the runs completed", bare)
        assert bare.stop() == 0, bare.log()
    finally:
        bare.kill()

    (tmp_path / "spec.yaml").write_text(SPECS)
    with_specs = ServeProcess(db, extra_args=("--specs", str(tmp_path / "spec.yaml"))).start()
    try:
        expected = {(r, "uses-cutoff"): ("pass", 1) for r in run_ids}
        wait_for(lambda: _labels(with_specs, run_ids) == expected, "the catch-up verdicts", with_specs)
        assert "caught up: 2 run(s) from before this start scored" in with_specs.log()
        assert with_specs.stop() == 0, with_specs.log()
    finally:
        with_specs.kill()

    # A further start finds nothing missing: no second catch-up, no new verdict.
    again = ServeProcess(
        db, extra_args=("--specs", str(tmp_path / "spec.yaml")), log_path=tmp_path / "again.log"
    ).start()
    try:
        time.sleep(1.0)  # the catch-up runs as scoring starts: it would have logged by now
        assert _labels(again, run_ids) == expected
        assert again.stop() == 0, again.log()
    finally:
        again.kill()
    assert "before this start" not in again.log()
    assert again.query("SELECT count(*) FROM verdicts WHERE task_id = ?", [task]) == [(2,)]


# ---- the search, in process ----------------------------------------------------------------------


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = open_writer(tmp_path / "search.duckdb")
    ensure_verdict_schema(con)
    try:
        yield con
    finally:
        con.close()


NOW = datetime.now(UTC).replace(tzinfo=None)
STARTED_US = int(NOW.replace(tzinfo=UTC).timestamp() * 1e6)
ALL = Spec.model_validate({"name": "all", "expected_tools": ["t"]})
ONLY_T = Spec.model_validate({"name": "only-t", "select": {"task": "t"}, "expected_tools": ["t"]})


def _trace(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    ago: timedelta,
    *,
    version: int = 1,
    task: str = "t",
    status: str = "complete",
    trace_id: str | None = None,
) -> None:
    row: list[Any] = [
        run_id, trace_id or f"trace-{run_id}", "root", task, "svc", "agent", None, NOW, NOW,
        2, 1, 0, "{}", status, version, NOW - ago, 1, 1,
    ]  # fmt: skip
    con.execute(f"INSERT INTO run_traces_p0 VALUES ({', '.join('?' * len(row))})", row)


def _verdict(con: duckdb.DuckDBPyConnection, run_id: str, spec: Spec, version: int = 1) -> None:
    verdict = error_verdict(
        run_id, f"trace-{run_id}", "t", spec.name, spec.fingerprint, "default", version, ""
    )
    store_verdicts(con, [verdict])


def test_the_search_finds_missing_verdicts_only_within_the_window(
    connection: duckdb.DuckDBPyConnection,
) -> None:
    recent, old = timedelta(minutes=2), timedelta(seconds=WINDOW_S + 3600)
    _trace(connection, "newest", timedelta(minutes=1))  # the last completion before this start
    _verdict(connection, "newest", ALL)
    _verdict(connection, "newest", ONLY_T)
    _trace(connection, "unscored", recent)
    _trace(connection, "half-scored", recent)
    _verdict(connection, "half-scored", ALL)
    _trace(connection, "reopened", recent, version=2)  # completed again, its new version unscored
    _verdict(connection, "reopened", ALL, version=1)
    _verdict(connection, "reopened", ONLY_T, version=1)
    _trace(connection, "not-selected", recent, task="other")  # only-t does not want it
    _verdict(connection, "not-selected", ALL)
    _trace(connection, "still-open", recent, status="open")
    _trace(connection, "too-old", old)
    _trace(connection, "this-process", timedelta(seconds=-1))  # completed after the start: the queue's
    # Two traces, one before the window: version 2 in all, and scored at version 2.
    _trace(connection, "two-traces", old, trace_id="a")
    _trace(connection, "two-traces", recent, trace_id="b")
    _verdict(connection, "two-traces", ALL, version=2)
    _verdict(connection, "two-traces", ONLY_T, version=2)

    found = {
        u.run[0].run_id: (u.specs, u.run[0].version)
        for u in unscored_runs(connection, [ALL, ONLY_T], STARTED_US)
    }
    assert found == {
        "unscored": (("all", "only-t"), 1),
        "half-scored": (("only-t",), 1),
        "reopened": (("all", "only-t"), 2),
    }
    assert unscored_runs(connection, [], STARTED_US) == []


def test_the_search_on_an_empty_database_finds_nothing(connection: duckdb.DuckDBPyConnection) -> None:
    assert unscored_runs(connection, [ALL], STARTED_US) == []

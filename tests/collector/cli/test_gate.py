"""`score` and `report` fail closed (issue 28, "What was seen" 1): scoring nothing exits 3 with one line
saying why, through a real `tracescore serve` fed by the real OpenTelemetry SDK, from the file once the
server stopped, and from ClickHouse's `otel_traces` (chDB); `--allow-empty` opts out; `--wait` waits
for the runs the server is completing. And what a CI system reads: `--format junit` and GitHub
Actions annotations."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector.cli import main
from collector.cli._unscored import Scope, Where, explain
from scoring import load_specs
from tests._otel import provider
from tests._server import ServeProcess

TASK = "same-day-dispatch"
GOOD = f"name: dispatch\nselect: {{task: {TASK}}}\nexpected_tools: [lookup_shipping_cutoff]\n"
TYPO = "name: dispatch\nselect: {task: same-day-dispach}\nexpected_tools: [lookup_shipping_cutoff]\n"
WRONG_KEY = f"name: dispatch\nselect: {{tsak: {TASK}}}\nexpected_tools: [lookup_shipping_cutoff]\n"
NOTHING_SCORED = 3


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def tracescore(*args: str, env: dict[str, str] | None = None) -> Done:
    """The `tracescore` command's own entry point, run in this process (a subprocess costs seconds of
    imports each time on a loaded machine); the servers it talks to are real processes."""
    out, err = io.StringIO(), io.StringIO()
    saved = {key: os.environ.get(key) for key in env or {}}
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse refusing the command line
                code = int(exc.code or 0)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return Done(code, out.getvalue(), err.getvalue())


def tracescore_process(*args: str) -> subprocess.CompletedProcess[str]:
    """In a process of its own: chDB keeps its first data directory for the life of a process."""
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def spec(tmp_path: Path, text: str, name: str = "spec.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def rollout(
    tp: TracerProvider, *, task: str = TASK, tools: tuple[str, ...] = ("lookup_shipping_cutoff",)
) -> None:
    """One agent run as the README's hand-instrumented agent sends it (GenAI conventions)."""
    tracer = tp.get_tracer("gate-test")
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop", "tracescore.task.id": task}
    with tracer.start_as_current_span("invoke_agent shop", attributes=agent):
        for tool in tools:
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.arguments": json.dumps({"region": "north"}),
            }
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes):
                pass


def send(server: ServeProcess, runs: int = 1, **kwargs: object) -> None:
    tp = provider(server)
    for _ in range(runs):
        rollout(tp, **kwargs)  # type: ignore[arg-type]
    assert tp.force_flush(10_000)
    tp.shutdown()


def wait_scored(db: Path, specs: str) -> None:
    """Until the server has completed the runs sent (a score that scores something)."""
    done = tracescore("score", "--db", str(db), "--spec", specs, "--no-store", "--wait", "30")
    assert done.returncode in (0, 1), done.stderr


def nothing_line(done: Done | subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith("tracescore: nothing scored")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_an_empty_database_fails_closed_in_server_and_file_mode(server: ServeProcess, tmp_path: Path) -> None:
    specs = spec(tmp_path, GOOD)
    served = tracescore("score", "--db", str(server.db), "--spec", specs)
    assert served.returncode == NOTHING_SCORED, served
    assert "no runs in the window: nothing was received" in nothing_line(served)
    report = tracescore("report", "--db", str(server.db), "--spec", specs)
    assert report.returncode == NOTHING_SCORED and "no runs in the window" in nothing_line(report)
    allowed = tracescore("score", "--db", str(server.db), "--spec", specs, "--allow-empty")
    assert allowed.returncode == 0, allowed
    assert server.stop() == 0
    from_file = tracescore("score", "--db", str(server.db), "--spec", specs)
    assert from_file.returncode == NOTHING_SCORED, from_file
    assert "no runs in the window" in nothing_line(from_file)


def test_a_typo_in_a_select_value_names_the_closest_value_seen(server: ServeProcess, tmp_path: Path) -> None:
    send(server, runs=2)
    wait_scored(server.db, spec(tmp_path, GOOD, "good.yaml"))
    typo = spec(tmp_path, TYPO)
    for mode in ("server", "file"):
        if mode == "file":
            assert server.stop() == 0
        done = tracescore("score", "--db", str(server.db), "--spec", typo)
        assert done.returncode == NOTHING_SCORED, (mode, done)
        line = nothing_line(done)
        assert "no spec's select matched any of the 2 complete run(s)" in line, line
        assert "task: 'same-day-dispach' is on no run (closest seen: 'same-day-dispatch')" in line, line
        report = tracescore("report", "--db", str(server.db), "--spec", typo)
        assert report.returncode == NOTHING_SCORED and "closest seen: 'same-day-dispatch'" in report.stderr
        assert tracescore("score", "--db", str(server.db), "--spec", typo, "--allow-empty").returncode == 0
    # The window flags (--since, --until, --where) are said the same way, asked of the file just served.
    with duckdb.connect(str(server.db), read_only=True) as connection:

        def query(sql: str) -> list[tuple[object, ...]]:
            return connection.execute(sql).fetchall()

        good = load_specs([Path(spec(tmp_path, GOOD, "good.yaml"))])
        later = explain(query, good, Scope(since=datetime(2100, 1, 1)), Where(False))
        assert later.startswith("no complete run started in the window (--since/--until); 2 complete run(s)")
        other = explain(query, good, Scope(where=(("task", "same-day-dispach"),)), Where(False))
        assert other == (
            "no complete run matches --where: task: 'same-day-dispach' is on no run "
            "(closest seen: 'same-day-dispatch')"
        )


def test_a_wrong_select_key_is_named_unknown(server: ServeProcess, tmp_path: Path) -> None:
    send(server)
    wait_scored(server.db, spec(tmp_path, GOOD, "good.yaml"))
    done = tracescore("score", "--db", str(server.db), "--spec", spec(tmp_path, WRONG_KEY))
    assert done.returncode == NOTHING_SCORED, done
    assert "select key 'tsak' is unknown: no run has it (closest key: 'task')" in nothing_line(done)


def test_before_runs_complete_it_says_so_and_wait_makes_it_pass(server: ServeProcess, tmp_path: Path) -> None:
    """Scored while the agent's run is still going (its tool span exported, its agent span not ended):
    deterministic however slow the machine, unlike racing the grace period."""
    tp = provider(server)
    tracer = tp.get_tracer("gate-test")
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop", "tracescore.task.id": TASK}
    root = tracer.start_span("invoke_agent shop", attributes=agent)
    with trace.use_span(root):
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_shipping_cutoff"}
        with tracer.start_as_current_span("execute_tool lookup_shipping_cutoff", attributes=tool):
            pass
    assert tp.force_flush(10_000)
    specs = spec(tmp_path, GOOD)
    early = tracescore("score", "--db", str(server.db), "--spec", specs)
    assert early.returncode == NOTHING_SCORED, early
    line = nothing_line(early)
    assert "1 trace(s) received, but no run is complete yet" in line, line
    assert "--wait SECONDS" in line, line
    root.end()
    assert tp.force_flush(10_000)
    tp.shutdown()
    waited = tracescore("score", "--db", str(server.db), "--spec", specs, "--wait", "30")
    assert waited.returncode == 0, waited
    assert "PASS" in waited.stdout


def test_junit_has_a_case_per_run_and_spec_and_github_annotations(tmp_path: Path) -> None:
    server = ServeProcess(
        db=tmp_path / "ci.duckdb", extra_args=("--plugin", "tests.plugins_for_tests")
    ).start()
    try:
        send(server)
        send(server, tools=("quote_shipping",))
        specs = tmp_path / "specs"
        specs.mkdir()
        spec(specs, GOOD, "dispatch.yaml")
        spec(specs, "name: explodes\nexpected_tools: [lookup_shipping_cutoff]\n", "explodes.yaml")
        wait_scored(server.db, str(specs))
        done = tracescore(
            "score", "--db", str(server.db), "--spec", str(specs), "--format", "junit",
            env={"GITHUB_ACTIONS": "true"},
        )  # fmt: skip
        assert done.returncode == 1, done
        root = ET.fromstring(done.stdout)
        assert root.tag == "testsuites"
        (suite,) = root.findall("testsuite")
        cases = suite.findall("testcase")
        assert len(cases) == 4  # 2 runs x 2 specs
        assert {c.get("classname") for c in cases} == {f"{TASK}/dispatch", f"{TASK}/explodes"}
        assert suite.get("tests") == "4" and suite.get("failures") == "1" and suite.get("errors") == "2"
        (failure,) = suite.iter("failure")
        assert "lookup_shipping_cutoff" in (failure.get("message") or ""), failure.attrib
        errors = list(suite.iter("error"))
        assert len(errors) == 2 and all("always raises" in (e.get("message") or "") for e in errors)
        for case in cases:
            assert set(case.attrib) <= {"name", "classname", "time", "file", "line"}
            assert all(child.tag in {"failure", "error", "skipped", "system-out"} for child in case)
        annotations = [line for line in done.stderr.splitlines() if line.startswith("::error ")]
        assert len(annotations) == 3, done.stderr
        assert any(
            a.startswith(f"::error title=tracescore%3A {TASK}/dispatch failed::run ") for a in annotations
        ), annotations
        plain = tracescore("score", "--db", str(server.db), "--spec", str(specs), env={"GITHUB_ACTIONS": ""})
        assert plain.returncode == 1 and "::error" not in plain.stderr + plain.stdout
        empty = tracescore(
            "score", "--db", str(server.db), "--spec", spec(tmp_path, TYPO), "--format", "junit",
            env={"GITHUB_ACTIONS": "true"},
        )  # fmt: skip
        assert empty.returncode == NOTHING_SCORED
        (only,) = ET.fromstring(empty.stdout).iter("testcase")
        error = only.find("error")
        assert error is not None and "closest seen: 'same-day-dispatch'" in (error.get("message") or "")
        assert "::error title=tracescore%3A nothing scored::" in empty.stderr
    finally:
        server.kill()


@pytest.fixture
def clickhouse_loader() -> object:
    pytest.importorskip("chdb")
    from tests.collector.clickhouse._chdb_tool import load
    from tests.collector.clickhouse._corpus import otlp_json

    return load, otlp_json


def test_clickhouse_mode_fails_closed_the_same_way(tmp_path: Path, clickhouse_loader: object) -> None:
    load, otlp_json = clickhouse_loader  # type: ignore[misc]
    captured = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(captured))
    rollout(tp)
    table = tmp_path / "clickhouse"
    load(table, [otlp_json(captured.get_finished_spans())])  # the Collector's otel_traces, as it writes
    url = f"chdb:{table}"
    before = ("--until", "2001-01-01T00:00")  # a window the run is not in
    nothing = tracescore_process("score", "--clickhouse", url, "--spec", spec(tmp_path, GOOD), *before)
    assert nothing.returncode == NOTHING_SCORED, nothing
    assert (
        "no runs in the window" in nothing_line(nothing) and "between --since and --until" in nothing.stderr
    )
    typo = tracescore_process("score", "--clickhouse", url, "--spec", spec(tmp_path, TYPO, "typo.yaml"))
    assert typo.returncode == NOTHING_SCORED, typo
    assert "closest seen: 'same-day-dispatch'" in nothing_line(typo)
    report = tracescore_process("report", "--clickhouse", url, "--spec", spec(tmp_path, WRONG_KEY, "w.yaml"))
    assert report.returncode == NOTHING_SCORED and "select key 'tsak' is unknown" in nothing_line(report)

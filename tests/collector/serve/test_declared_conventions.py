"""A user's own span format, taught with the conventions file of docs/conventions.md ("Your own
conventions") and nothing else: the real OpenTelemetry SDK sends the documented hand-instrumented
agent's spans over OTLP to a real `tracescore serve --conventions`, and the stored executions and the
verdicts are read from DuckDB. A broken file is refused at start in one line (exit 2), and a broken
edit while serving is logged once while the last good conventions keep recognising."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status, StatusCode

from tests._otel import provider, stored_rows
from tests._server import ServeProcess

ROOT = Path(__file__).resolve().parents[3]
# docs/conventions.md's spec: it selects the runs of the agent the file's agent convention names.
SPEC = (
    "name: weather\nselect: {agent: support}\nexpected_tools: [get_weather]\n"
    "arguments: {get_weather: {city: Paris}}\n"
)


def documented_conventions() -> str:
    """The conventions file exactly as docs/conventions.md shows it."""
    page = (ROOT / "docs" / "conventions.md").read_text()
    after = page.split("<!-- conventions-example -->", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", after, re.S)
    assert found is not None, "docs/conventions.md has no conventions example"
    return found.group(1)


class AcmeAgent:
    """The hand-instrumented agent of docs/conventions.md: one `tool:NAME` span per call."""

    def __init__(self, tracer_provider: TracerProvider) -> None:
        self.tracer = tracer_provider.get_tracer("acme.agent")

    def call_tool(self, name: str, call_id: str, arguments: dict[str, Any], tool: Callable[..., Any]) -> Any:
        with self.tracer.start_as_current_span(f"tool:{name}") as span:
            span.set_attribute("acme.kind", "tool")
            span.set_attribute("acme.call", json.dumps({"id": call_id, "args": arguments}))
            try:
                result = tool(**arguments)
            except Exception as exc:
                span.set_attribute("acme.error", str(exc))
                span.set_status(Status(StatusCode.ERROR))
                raise
            span.set_attribute("acme.output", repr(result))
            return result

    def run(self, task: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
        """One run (its own trace): the calls in order; a raising tool is caught as an agent would."""
        attributes = {"tracescore.task.id": task, "acme.agent": "support"}
        with self.tracer.start_as_current_span("agent.run", attributes=attributes) as root:
            for index, (call_id, arguments) in enumerate(calls):
                with contextlib.suppress(LookupError):
                    self.call_tool("get_weather", call_id or f"{task}-{index}", arguments, _weather)
            return format(root.get_span_context().trace_id, "032x")


def _weather(city: str) -> dict[str, Any]:
    if city == "Atlantis":
        raise LookupError("no weather for Atlantis")
    return {"temp_c": 21, "sky": "clear", "city": city}


def _serve(tmp_path: Path, conventions: Path) -> ServeProcess:
    spec = tmp_path / "weather.yaml"
    spec.write_text(SPEC)
    return ServeProcess(
        tmp_path / "acme.duckdb", extra_args=("--conventions", str(conventions), "--specs", str(spec))
    )


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def test_a_users_convention_from_the_docs_is_read_right_end_to_end(tmp_path: Path) -> None:
    conventions = tmp_path / "acme-conventions.yaml"
    conventions.write_text(documented_conventions())
    server = _serve(tmp_path, conventions).start()
    tracer_provider = provider(server, "http")
    try:
        agent = AcmeAgent(tracer_provider)
        passing = agent.run("acme:paris", [("call-1", {"city": "Paris"})])
        wrong_city = agent.run("acme:lyon", [("call-2", {"city": "Lyon"})])
        raised = agent.run("acme:atlantis", [("call-3", {"city": "Atlantis"})])
        tracer_provider.shutdown()
        time.sleep(1.0)  # the grace period (0.3 s) passes and the runs complete
    finally:
        assert server.stop() == 0, server.log()
    rows = {
        r["trace_id"]: r
        for r in stored_rows(
            server,
            "SELECT trace_id, convention, tool_name, call_id, arguments, arguments_error, result, error, "
            "error_message, agent_path FROM executions",
        )
    }
    assert set(rows) == {passing, wrong_city, raised}
    ok = rows[passing]
    assert (ok["convention"], ok["tool_name"], ok["call_id"], ok["error"]) == (
        "acme",
        "get_weather",
        "call-1",
        False,
    )
    assert json.loads(ok["arguments"]) == {"city": "Paris"} and ok["arguments_error"] is None
    assert json.loads(ok["result"]) == {"temp_c": 21, "sky": "clear", "city": "Paris"}
    assert json.loads(rows[wrong_city]["arguments"]) == {"city": "Lyon"}
    assert {r["agent_path"] for r in rows.values()} == {"support"}
    failed = rows[raised]
    assert (failed["error"], failed["error_message"], failed["call_id"]) == (
        True,
        "no weather for Atlantis",
        "call-3",
    )
    assert failed["result"] is None

    verdicts = {
        r["trace_id"]: r["label"]
        for r in stored_rows(server, "SELECT trace_id, label FROM verdicts WHERE spec = 'weather'")
    }
    assert verdicts == {passing: "pass", wrong_city: "fail", raised: "fail"}


def test_a_broken_conventions_file_stops_the_start_in_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(documented_conventions().replace("span_name_pattern:", "span_name_patern:"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACESCORE_LOG_FORMAT": "text"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "collector.cli",
            "serve",
            "--db",
            str(tmp_path / "x.duckdb"),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--conventions",
            str(broken),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    line_number = next(
        i for i, text in enumerate(broken.read_text().splitlines(), 1) if "span_name_patern" in text
    )
    assert (
        f"{broken}:{line_number}: tools.0.match.span_name_patern: unknown key; "
        "did you mean 'span_name_pattern'?" in lines[0]
    )
    assert not (tmp_path / "x.duckdb").exists()


def test_a_broken_edit_while_serving_keeps_the_last_good_conventions(tmp_path: Path) -> None:
    conventions = tmp_path / "acme-conventions.yaml"
    conventions.write_text(documented_conventions())
    server = _serve(tmp_path, conventions)
    server.extra_args = (*server.extra_args, "--decode-workers", "1")
    server.start()
    tracer_provider = provider(server, "grpc")
    try:
        agent = AcmeAgent(tracer_provider)
        broken_text = documented_conventions().replace("parser: python-literal", "parser: yaml")
        _write_atomically(conventions, broken_text)
        deadline = time.monotonic() + 15
        while "conventions reload failed" not in server.log():
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as answer:
            metrics = answer.read().decode()
        assert "\ntracescore_conventions_reload_failures_total 1\n" in metrics
        after_broken_edit = agent.run("acme:paris", [("call-9", {"city": "Paris"})])
        tracer_provider.force_flush()
        time.sleep(2.5)  # several polls of the unchanged broken file: logged once all the same
        # Fixed: the new conventions are in force, in the decode worker too.
        _write_atomically(conventions, documented_conventions().replace("name: acme ", "name: acme_v2 "))
        while "reloaded conventions: acme_v2" not in server.log():
            assert time.monotonic() < deadline + 10, server.log()
            time.sleep(0.1)
        after_fix = agent.run("acme:paris", [("call-10", {"city": "Paris"})])
        tracer_provider.shutdown()
        time.sleep(0.5)
    finally:
        assert server.stop() == 0, server.log()
    failures = [line for line in server.log().splitlines() if "conventions reload failed" in line]
    assert len(failures) == 1, server.log()
    assert f"{conventions}:" in failures[0] and "tools.0.result.parser" in failures[0]
    rows = stored_rows(
        server, "SELECT trace_id, convention, tool_name, arguments, result FROM executions ORDER BY call_id"
    )
    assert [(r["trace_id"], r["convention"], r["tool_name"]) for r in rows] == [
        (after_fix, "acme_v2", "get_weather"),
        (after_broken_edit, "acme", "get_weather"),
    ]
    assert json.loads(rows[1]["result"])["city"] == "Paris"
    verdicts = stored_rows(server, "SELECT trace_id, label FROM verdicts")
    assert {v["trace_id"]: v["label"] for v in verdicts} == {after_broken_edit: "pass", after_fix: "pass"}

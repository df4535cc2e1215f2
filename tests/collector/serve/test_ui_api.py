"""The live UI's routes (docs/ui.md) on a real `serve --specs --auth-token`, fed by the OpenTelemetry SDK.

The pages load without the token and with a strict CSP; every JSON read needs the token and refuses
another site's page; runs come in pages whose cursors cover every run once, newest first; filters pick
what the stored verdicts and attributes say; a run shows its executions, its requests never executed
and its checks; a conversation shows its turns with per-turn verdicts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests._otel import exporter
from tests._server import ServeProcess
from tests.scoring.report.test_report_html import BATCH_1, BATCH_2, SPECS, _emit

TOKEN = "ui-api-token"
CONVERSATION_SPEC = """
---
name: chat
select: {task: chat}
turns:
  - expected_tools: [get_weather]
  - expected_tools: [book_table]
"""


def _request(
    server: ServeProcess, path: str, token: str | None = TOKEN, **headers: str
) -> tuple[int, Any, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{server.http_port}{path}", headers=headers)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
            kind = response.headers.get("Content-Type", "")
            return response.status, response.headers, json.loads(body) if "json" in kind else body
    except urllib.error.HTTPError as exc:
        body = exc.read()
        return (
            exc.code,
            exc.headers,
            json.loads(body) if "json" in (exc.headers.get("Content-Type") or "") else body,
        )


def _get(server: ServeProcess, path: str) -> Any:
    status, _, body = _request(server, path)
    assert status == 200, (path, body)
    return body


def _provider(server: ServeProcess, version: str) -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({"service.name": "shop-agent", "service.version": version}))
    tp.add_span_processor(
        BatchSpanProcessor(exporter(server, "grpc", headers={"authorization": f"Bearer {TOKEN}"}))
    )
    return tp


def _part_of_multi(server: ServeProcess, part: int) -> None:
    """One trace of the run `multi`, which spans two (an explicit run id reused), version 2.0."""
    tp = _provider(server, "2.0")
    tracer = tp.get_tracer("tests")
    attributes = {
        "tracescore.run.id": "multi",
        "tracescore.task.id": "multi",
        "gen_ai.operation.name": "invoke_agent",
    }
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
    with (
        tracer.start_as_current_span(f"invoke_agent part {part}", attributes=attributes),
        tracer.start_as_current_span("execute_tool lookup", attributes=tool),
    ):
        pass
    tp.shutdown()


def _conversation(tp: TracerProvider) -> None:
    tracer = tp.get_tracer("tests")
    for index, tool in ((1, "get_weather"), (2, "get_weather")):
        root = tracer.start_span(
            "invoke_agent concierge",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "concierge",
                "gen_ai.agent.call.id": f"chat-{index}",
                "tracescore.task.id": "chat",
                "tracescore.conversation.id": "conv-1",
                "tracescore.turn.index": index,
                "tracescore.turn.last": index == 2,
            },
        )
        with (
            trace.use_span(root, end_on_exit=True),
            tracer.start_as_current_span(
                f"execute_tool {tool}",
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
            ),
        ):
            pass


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    directory = tmp_path_factory.mktemp("ui-api")
    (directory / "specs.yaml").write_text(SPECS + CONVERSATION_SPEC)
    server = ServeProcess(
        directory / "t.duckdb", extra_args=("--specs", str(directory / "specs.yaml"), "--auth-token", TOKEN)
    ).start()
    try:
        old, new = _provider(server, "1.4"), _provider(server, "1.5")
        _part_of_multi(server, 1)
        _emit(old.get_tracer("tests"), BATCH_1)
        old.shutdown()
        time.sleep(0.6)  # the first trace of `multi` completes (grace 0.3 s) before its second comes
        _emit(new.get_tracer("tests"), BATCH_2)
        _conversation(new)
        _part_of_multi(server, 2)
        new.shutdown()
        wanted = len(BATCH_1) + len(BATCH_2) + 1  # the runs, and the conversation (its turns in its verdict)
        deadline = time.monotonic() + 30
        while len(_get(server, "/api/v1/verdicts")) < wanted:
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.1)
        yield server
    finally:
        assert server.stop() == 0, server.log()


def test_the_pages_load_without_the_token_under_a_strict_csp(server: ServeProcess) -> None:
    for path in ("/", "/ui/app.js", "/ui/app.css"):
        status, headers, _ = _request(server, path, token=None)
        assert status == 200, path
        policy = headers["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy and "unsafe" not in policy
        assert headers["X-Content-Type-Options"] == "nosniff"
    page = _request(server, "/", token=None)[2].decode()
    assert "http://" not in page and "https://" not in page  # nothing from elsewhere
    assert "<script>" not in page and "style=" not in page  # no inline code the CSP would refuse
    assert _request(server, "/ui/nothing.js", token=None)[0] == 404
    assert _request(server, "/ui/..%2Fserver.py", token=None)[0] == 404
    # DNS rebinding: the pages answer only to the hosts the API answers to.
    assert _request(server, "/", token=None, Host="evil.example")[0] == 421


@pytest.mark.parametrize(
    "path", ["/api/v1/ui", "/api/v1/runs/page", "/api/v1/run?run=w1", "/api/v1/task?task=weather"]
)
def test_every_read_needs_the_token_and_refuses_other_sites(server: ServeProcess, path: str) -> None:
    assert _request(server, path, token=None)[0] == 401
    assert _request(server, path, token="wrong")[0] == 401
    assert _request(server, path, Origin="https://evil.example")[0] == 403
    assert _request(server, path)[0] == 200


def test_pages_of_runs_cover_every_run_once_newest_first(server: ServeProcess) -> None:
    # Newest completion first; runs completed together (one batch) by id, newest first too.
    stored = _get(server, "/api/v1/runs")
    everything = [
        r["run_id"] for r in sorted(stored, key=lambda r: (r["completed_at"], r["run_id"]), reverse=True)
    ]
    seen, after, pages = [], "", 0
    while True:
        page = _get(server, f"/api/v1/runs/page?limit=3&after={urllib.parse.quote(after)}")
        seen += [r["run_id"] for r in page["runs"]]
        pages += 1
        if page["next"] is None:
            break
        after = page["next"]
    assert seen == everything and len(set(seen)) == len(seen) and pages == -(-len(seen) // 3)
    # A run of two traces is listed once, where its last trace completed.
    multi = next(r for r in stored if r["run_id"] == "multi")
    assert multi["n_traces"] == 2 and seen.count("multi") == 1
    assert _request(server, "/api/v1/runs/page?limit=0")[0] == 400
    assert _request(server, "/api/v1/runs/page?after=nonsense")[0] == 400


def test_filters_pick_what_the_verdicts_and_attributes_say(server: ServeProcess) -> None:
    def runs(query: str) -> list[str]:
        return sorted(r["run_id"] for r in _get(server, f"/api/v1/runs/page?{query}")["runs"])

    verdicts = _get(server, "/api/v1/verdicts")
    for spec, label in (("weather", "fail"), ("weather", "pass"), ("search", "fail"), (None, "error")):
        expected = sorted(
            v["run_id"]
            for v in verdicts
            if v["label"] == label and spec in (None, v["spec"]) and not v.get("conversation_id")
        )
        assert runs(f"label={label}" + (f"&spec={spec}" if spec else "")) == expected, (spec, label)
    assert runs("task=refund") == ["r1", "r2"]
    assert runs("version=1.4") == sorted(r[1] for r in BATCH_1)
    assert runs("where=service.version=1.5&task=weather") == ["w4", "w5"]
    assert runs("service=shop-agent") == runs("") and runs("service=other") == []
    assert runs("since=2100-01-01T00:00:00Z") == []
    assert _request(server, "/api/v1/runs/page?label=maybe")[0] == 400
    page = _get(server, "/api/v1/runs/page?task=weather&limit=1")["runs"][0]
    assert [(v["spec"], v["label"]) for v in page["verdicts"]] == [("weather", "pass")]  # w5's, newest


def test_a_run_shows_its_executions_requests_and_checks(server: ServeProcess) -> None:
    w5 = _get(server, "/api/v1/run?run=w5")
    assert [e["tool_name"] for e in w5["executions"]] == ["lookup_station", "get_weather"]
    assert w5["executions"][1]["arguments"] == {"city": "Paris"} and w5["executions"][1]["duration_ms"] == 400
    s1 = _get(server, "/api/v1/run?run=s1")
    assert s1["executions"] == [] and [r["tool_name"] for r in s1["requested_never_executed"]] == ["search"]
    (verdict,) = s1["verdicts"]
    assert verdict["label"] == "fail" and any(not c["satisfied"] for c in verdict["checks"])
    s2 = _get(server, "/api/v1/run?run=s2")
    assert s2["executions"][0]["error"] is True and s2["executions"][0]["error_message"] == "upstream timeout"
    assert _request(server, "/api/v1/run?run=nope")[0] == 404
    assert _request(server, "/api/v1/run")[0] == 400


def test_a_task_and_a_conversation(server: ServeProcess) -> None:
    task = _get(server, "/api/v1/task?task=weather")
    assert task["specs"] == ["weather"]
    assert sum(p["n_scored"] for p in task["history"]) == 5
    latency = {t["tool"]: t for t in task["tool_latency"]}
    assert latency["get_weather"]["n"] == 4 and latency["get_weather"]["n_errored"] == 1
    assert latency["get_weather"]["max_ms"] == 400
    conversation = _get(server, "/api/v1/conversation?conversation=conv-1")
    assert [t["run_id"] for t in conversation["turns"]] == ["chat-1", "chat-2"]
    (verdict,) = conversation["verdicts"]
    assert verdict["spec"] == "chat" and [t["passed"] for t in verdict["turns"]] == [True, False]
    assert _request(server, "/api/v1/conversation?conversation=nope")[0] == 404


def test_trace_url_must_hold_the_trace_id_placeholder(tmp_path: Any) -> None:
    answer = subprocess.run(
        [
            sys.executable,
            "-m",
            "collector.cli",
            "serve",
            "--db",
            str(tmp_path / "t.duckdb"),
            "--trace-url",
            "https://x/",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert answer.returncode == 2 and "{trace_id}" in answer.stderr

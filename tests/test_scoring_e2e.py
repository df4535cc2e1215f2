"""Real OTLP → `tracescore serve` → stop → `tracescore score/report` on the file → exact verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import Status, StatusCode, Tracer

from tests._otel import provider
from tests._server import ServeProcess

SPECS = """
name: cutoff
select: {task: cutoff}
expected_tools: [lookup_shipping_cutoff]
arguments:
  lookup_shipping_cutoff: {region: north}
allow_additional: false
---
name: team-search
select: {task: team}
expected_tools: [search]
arguments: {search: {query: parcels}}
---
name: team-search-leader
select: {task: team}
scope: leader
expected_tools: [search]
---
name: refund
select: {task: refund}
expected_tools: [refund_order]
---
name: approval
select: {task: approval}
expected_tools: [charge_card]
---
name: history
select: {task: history}
expected_tools: [lookup_shipping_cutoff]
"""

GENAI_AGENT = {"gen_ai.operation.name": "invoke_agent"}


def _tool(tracer: Tracer, name: str, arguments: dict[str, Any], **extra: Any) -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
        **extra,
    }
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes) as span:
        if "error.type" in extra:
            span.set_status(Status(StatusCode.ERROR, "upstream timeout"))


def _genai_run(tracer: Tracer, task: str, agent: str, body: Any) -> str:
    attributes = {**GENAI_AGENT, "gen_ai.agent.name": agent, "tracescore.task.id": task}
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attributes) as span:
        body(tracer)
    return format(span.get_span_context().span_id, "016x")


def _openinference_team(tracer: Tracer) -> str:
    leader_attrs = {
        "openinference.span.kind": "AGENT",
        "agent.name": "desk",
        "agno.run.id": "team-run-1",
        "tracescore.task.id": "team",
    }
    with tracer.start_as_current_span("desk.run", attributes=leader_attrs), tracer.start_as_current_span(
        "delegate",
        attributes={
            "openinference.span.kind": "TOOL",
            "tool.name": "delegate_task_to_member",
            "input.value": json.dumps({"member": "researcher"}),
        },
    ):
        member = {"openinference.span.kind": "AGENT", "agent.name": "researcher"}
        with tracer.start_as_current_span("researcher.run", attributes=member):
            search = {
                "openinference.span.kind": "TOOL",
                "tool.name": "search",
                "input.value": json.dumps({"query": "parcels", "limit": 5}),
            }
            with tracer.start_as_current_span("search", attributes=search):
                pass
    return "team-run-1"


def _refused(tracer: Tracer) -> None:
    messages = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_9", "name": "refund_order", "arguments": {"order": "A1"}}
            ],
        }
    ]
    with tracer.start_as_current_span(
        "chat", attributes={"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(messages)}
    ):
        pass


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("scoring")
    server = ServeProcess(directory / "t.duckdb").start()
    runs: dict[str, str] = {}
    try:
        tp = provider(server, "grpc")
        tracer = tp.get_tracer("tests")
        runs["pass"] = _genai_run(
            tracer,
            "cutoff",
            "shop",
            lambda t: _tool(t, "lookup_shipping_cutoff", {"region": "north", "day": 1}),
        )
        runs["errored"] = _genai_run(
            tracer,
            "cutoff",
            "shop",
            lambda t: _tool(
                t, "lookup_shipping_cutoff", {"region": "north"}, **{"error.type": "TimeoutError"}
            ),
        )
        runs["strict"] = _genai_run(
            tracer,
            "cutoff",
            "shop",
            lambda t: (
                _tool(t, "lookup_shipping_cutoff", {"region": "south"}),
                _tool(t, "send_email", {"to": "x"}),
            ),
        )
        runs["team"] = _openinference_team(tracer)
        runs["refund"] = _genai_run(tracer, "refund", "shop", _refused)
        runs["approval"] = _genai_run(
            tracer,
            "approval",
            "shop",
            lambda t: _tool(
                t,
                "charge_card",
                {"amount": 5},
                **{"tracescore.tool.paused": True, "tracescore.tool.pause_reason": "confirmation"},
            ),
        )
        runs["history"] = _genai_run(
            tracer,
            "history",
            "shop",
            lambda t: _tool(
                t, "lookup_shipping_cutoff", {"region": "north"}, **{"tracescore.tool.from_history": True}
            ),
        )
        tp.force_flush()
        tp.shutdown()
    finally:
        assert server.stop() == 0
    spec_file = directory / "specs.yaml"
    spec_file.write_text(SPECS)
    score = subprocess.run(
        [
            sys.executable,
            "-m",
            "collector.cli",
            "score",
            "--db",
            str(server.db),
            "--spec",
            str(spec_file),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "collector.cli",
            "report",
            "--db",
            str(server.db),
            "--spec",
            str(spec_file),
            "--format",
            "json",
            "--k",
            "2",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    verdicts = json.loads(score.stdout)
    yield {
        "runs": runs,
        "exit": score.returncode,
        "stderr": score.stderr,
        "verdicts": {(v["run_id"], v["spec"]): v for v in verdicts},
        "report": {(r["task"], r["spec"]): r for r in json.loads(report.stdout)},
        "server": server,
    }


def test_score_exits_1_when_any_run_failed(scored: dict[str, Any]) -> None:
    assert scored["exit"] == 1, scored["stderr"]
    # six specs, each selecting by task: 3 cutoff runs + 2 team verdicts + one each for the rest
    assert len(scored["verdicts"]) == 8


def test_a_clean_matching_call_passes_with_the_exact_verdict(scored: dict[str, Any]) -> None:
    run = scored["runs"]["pass"]
    verdict = scored["verdicts"][(run, "cutoff")]
    assert verdict["passed"] is True and verdict["label"] == "pass" and verdict["value"] == 1.0
    assert [(c["kind"], c["target"], c["satisfied"]) for c in verdict["checks"]] == [
        ("expected_tool", "lookup_shipping_cutoff", True),
        ("arguments", "lookup_shipping_cutoff", True),
    ]
    assert verdict["missing_tools"] == [] and verdict["additional_tools"] == []
    assert verdict["failed_argument_checks"] == [] and verdict["latency_violations"] == []
    assert verdict["reason"] is None and verdict["task"] == "cutoff" and verdict["run_version"] == 1
    assert len(verdict["spec_fingerprint"]) == 64


def test_an_errored_call_satisfies_nothing(scored: dict[str, Any]) -> None:
    verdict = scored["verdicts"][(scored["runs"]["errored"], "cutoff")]
    assert verdict["passed"] is False and verdict["value"] == 0.0
    assert verdict["missing_tools"] == ["lookup_shipping_cutoff (errored)"]
    assert verdict["failed_argument_checks"] == [
        {"tool": "lookup_shipping_cutoff", "arguments": {"region": "north"}}
    ]
    assert verdict["reason"] == (
        "expected tool lookup_shipping_cutoff has no clean execution (errored); "
        'no clean lookup_shipping_cutoff execution to match arguments {"region": "north"}'
    )


def test_strict_mode_fails_an_unexpected_tool_and_keeps_the_value(scored: dict[str, Any]) -> None:
    verdict = scored["verdicts"][(scored["runs"]["strict"], "cutoff")]
    assert verdict["passed"] is False and verdict["value"] == 0.5
    assert verdict["additional_tools"] == ["send_email"]
    assert verdict["reason"].endswith("unexpected tools not allowed: send_email")
    assert verdict["gates"][0]["kind"] == "strict" and verdict["gates"][0]["satisfied"] is False


def test_team_member_executions_count_at_any_depth_unless_scope_is_leader(scored: dict[str, Any]) -> None:
    everyone = scored["verdicts"][("team-run-1", "team-search")]
    assert everyone["passed"] is True and everyone["value"] == 1.0
    leader = scored["verdicts"][("team-run-1", "team-search-leader")]
    assert leader["passed"] is False
    assert leader["missing_tools"] == ["search"]
    assert leader["reason"] == (
        "expected tool search has no clean execution; 1 member execution(s) left out (scope: leader)"
    )


def test_refused_paused_and_history_calls_never_satisfy(scored: dict[str, Any]) -> None:
    runs, verdicts = scored["runs"], scored["verdicts"]
    refund = verdicts[(runs["refund"], "refund")]
    assert refund["missing_tools"] == ["refund_order (requested but never executed)"]
    assert refund["reason"] == (
        "run has no tool executions; expected tool refund_order has no clean execution "
        "(requested but never executed)"
    )
    approval = verdicts[(runs["approval"], "approval")]
    assert approval["passed"] is False and approval["missing_tools"] == ["charge_card (paused)"]
    history = verdicts[(runs["history"], "history")]
    assert history["passed"] is False and history["missing_tools"] == ["lookup_shipping_cutoff"]


def test_report_gives_rollout_statistics_per_task(scored: dict[str, Any]) -> None:
    cutoff = scored["report"][("cutoff", "cutoff")]
    assert (cutoff["n_scored"], cutoff["n_passed"]) == (3, 1)
    assert cutoff["pass_rate"] == pytest.approx(1 / 3)
    assert cutoff["mean_value"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert cutoff["k"] == 2
    assert cutoff["pass_at_k"] == pytest.approx(1 - 1 / 3)  # 1 − C(2,2)/C(3,2)
    assert cutoff["pass_hat_k"] == pytest.approx(0.0)  # C(1,2)/C(3,2)
    assert cutoff["in_learning_zone"] is True
    assert scored["report"][("refund", "refund")]["in_learning_zone"] is False


def test_verdicts_are_stored_once_per_run_spec_and_version(scored: dict[str, Any]) -> None:
    server: ServeProcess = scored["server"]
    rows = server.query("SELECT count(*), count(DISTINCT (run_id, spec)) FROM verdicts")
    assert rows == [(8, 8)]
    spec_file = server.db.parent / "specs.yaml"
    again = subprocess.run(
        [sys.executable, "-m", "collector.cli", "score", "--db", str(server.db), "--spec", str(spec_file)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert again.returncode == 1
    assert server.query("SELECT count(*) FROM verdicts") == [(8,)]  # re-scoring replaces
    task_results = server.query("SELECT n_scored, n_passed FROM task_results WHERE task = 'cutoff'")
    assert task_results == [(3, 1)]


def test_a_broken_spec_scores_nothing_and_names_the_fix(scored: dict[str, Any], tmp_path: Path) -> None:
    server: ServeProcess = scored["server"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: oops\nexpected_tools: lookup_shipping_cutoff\n")
    result = subprocess.run(
        [sys.executable, "-m", "collector.cli", "score", "--db", str(server.db), "--spec", str(bad)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert str(bad) in result.stderr and "'oops'" in result.stderr and "expected_tools" in result.stderr
    assert "[lookup_shipping_cutoff]" in result.stderr and "Traceback" not in result.stderr

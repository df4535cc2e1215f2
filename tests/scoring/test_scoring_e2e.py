"""Real OTLP → `tracescore serve` → stop → `tracescore score/report` on the file → exact verdicts.

Every scenario is emitted twice, once as an OpenTelemetry GenAI agent and once as an OpenInference one
(Agno's shape), so each rule is shown on both conventions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import Status, StatusCode, Tracer

from tests._otel import provider
from tests._server import ServeProcess

CONVENTIONS = ("gen_ai", "openinference")

SPECS = """
name: cutoff
select: {task: [gen_ai:cutoff, openinference:cutoff]}
expected_tools: [lookup_shipping_cutoff]
arguments:
  lookup_shipping_cutoff: {region: north}
allow_additional: false
---
name: team-search
select: {task: [gen_ai:team, openinference:team]}
expected_tools: [search]
arguments: {search: {query: parcels}}
---
name: team-search-leader
select: {task: [gen_ai:team, openinference:team]}
scope: leader
expected_tools: [search]
---
name: refund
select: {task: [gen_ai:refund, openinference:refund]}
expected_tools: [refund_order]
---
name: approval
select: {task: [gen_ai:approval, openinference:approval]}
expected_tools: [charge_card]
---
name: history
select: {task: [gen_ai:history, openinference:history]}
expected_tools: [lookup_shipping_cutoff]
"""


class Emitter:
    """Writes agent runs with one convention's attributes, through the real SDK."""

    def __init__(self, tracer: Tracer, convention: str) -> None:
        self.tracer = tracer
        self.convention = convention

    def agent(self, task: str | None, name: str, run_id: str) -> AbstractContextManager[Any]:
        if self.convention == "gen_ai":
            attributes = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "gen_ai.agent.call.id": run_id,
            }
        else:
            attributes = {"openinference.span.kind": "AGENT", "agent.name": name, "agno.run.id": run_id}
        if task is not None:
            attributes["tracescore.task.id"] = f"{self.convention}:{task}"
        return self.tracer.start_as_current_span(f"{name}.run", attributes=attributes)

    def tool(self, name: str, arguments: dict[str, Any], *, error: bool = False, **extra: Any) -> None:
        if self.convention == "gen_ai":
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": json.dumps(arguments),
            }
        else:
            attributes = {
                "openinference.span.kind": "TOOL",
                "tool.name": name,
                "input.value": json.dumps(arguments),
                "tool.parameters": json.dumps(arguments),
            }
        with self.tracer.start_as_current_span(name, attributes={**attributes, **extra}) as span:
            if error:
                span.set_status(Status(StatusCode.ERROR, "upstream timeout"))

    def request(self, name: str, arguments: dict[str, Any], call_id: str) -> None:
        if self.convention == "gen_ai":
            parts = [{"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}]
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
            }
        else:
            prefix = "llm.output_messages.0.message.tool_calls.0.tool_call"
            attributes = {
                "openinference.span.kind": "LLM",
                f"{prefix}.id": call_id,
                f"{prefix}.function.name": name,
                f"{prefix}.function.arguments": json.dumps(arguments),
            }
        with self.tracer.start_as_current_span("chat", attributes=attributes):
            pass


def _scenarios(emit: Emitter) -> dict[str, str]:
    """Emit every scenario; returns scenario → run id."""
    c = emit.convention
    runs = {}

    def run(key: str, task: str, body: Callable[[], None]) -> None:
        runs[key] = f"{c}-{key}"
        with emit.agent(task, "shop", runs[key]):
            body()

    run("pass", "cutoff", lambda: emit.tool("lookup_shipping_cutoff", {"region": "north", "day": 1}))
    run("errored", "cutoff", lambda: emit.tool("lookup_shipping_cutoff", {"region": "north"}, error=True))
    run(
        "strict",
        "cutoff",
        lambda: (
            emit.tool("lookup_shipping_cutoff", {"region": "south"}),
            emit.tool("send_email", {"to": "x"}),
        ),
    )
    runs["team"] = f"{c}-team"
    with emit.agent("team", "desk", runs["team"]):
        emit.request("delegate_task_to_member", {"member": "researcher"}, "call_d")
        emit.tool("delegate_task_to_member", {"member": "researcher"})
        with emit.agent(None, "researcher", f"{c}-member"):
            emit.tool("search", {"query": "parcels", "limit": 5})
    run("refund", "refund", lambda: emit.request("refund_order", {"order": "A1"}, "call_9"))
    run(
        "approval",
        "approval",
        lambda: emit.tool(
            "charge_card",
            {"amount": 5},
            **{"tracescore.tool.paused": True, "tracescore.tool.pause_reason": "confirmation"},
        ),
    )
    run(
        "history",
        "history",
        lambda: emit.tool(
            "lookup_shipping_cutoff", {"region": "north"}, **{"tracescore.tool.from_history": True}
        ),
    )
    return runs


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("scoring")
    server = ServeProcess(directory / "t.duckdb").start()
    runs: dict[str, dict[str, str]] = {}
    try:
        for convention, protocol in zip(CONVENTIONS, ("grpc", "http"), strict=True):
            tp = provider(server, protocol)
            runs[convention] = _scenarios(Emitter(tp.get_tracer("tests"), convention))
            tp.force_flush()
            tp.shutdown()
    finally:
        assert server.stop() == 0
    spec_file = directory / "specs.yaml"
    spec_file.write_text(SPECS)
    score = _cli("score", "--db", str(server.db), "--spec", str(spec_file), "--format", "json")
    report = _cli("report", "--db", str(server.db), "--spec", str(spec_file), "--format", "json", "--k", "2")
    yield {
        "runs": runs,
        "exit": score.returncode,
        "stderr": score.stderr,
        "verdicts": {(v["run_id"], v["spec"]): v for v in json.loads(score.stdout)},
        "report": {(r["task"], r["spec"]): r for r in json.loads(report.stdout)},
        "server": server,
        "spec_file": spec_file,
    }


def test_score_exits_1_when_any_run_failed(scored: dict[str, Any]) -> None:
    assert scored["exit"] == 1, scored["stderr"]
    # per convention: 3 cutoff runs, 2 verdicts for the team run, one each for refund, approval, history
    assert len(scored["verdicts"]) == 2 * 8


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_a_clean_matching_call_passes_with_the_exact_verdict(scored: dict[str, Any], convention: str) -> None:
    run = scored["runs"][convention]["pass"]
    verdict = scored["verdicts"][(run, "cutoff")]
    fingerprint = verdict.pop("spec_fingerprint")
    assert len(fingerprint) == 64
    span_id = verdict["detail"]["reconciliation"]["calls"][0]["span_id"]
    assert len(span_id) == 16
    assert verdict == {
        "run_id": run,
        "trace_id": verdict["trace_id"],
        "task": f"{convention}:cutoff",
        "spec": "cutoff",
        "profile": "default",
        "passed": True,
        "value": 1.0,
        "label": "pass",
        "checks": [
            {
                "kind": "expected_tool",
                "target": "lookup_shipping_cutoff",
                "satisfied": True,
                "detail": "lookup_shipping_cutoff ran cleanly",
                "expected": None,
                "observed": None,
            },
            {
                "kind": "arguments",
                "target": "lookup_shipping_cutoff",
                "satisfied": True,
                "detail": 'a clean lookup_shipping_cutoff call has arguments {"region": "north"}',
                "expected": {"region": "north"},
                "observed": 1,
            },
        ],
        "missing_tools": [],
        "additional_tools": [],
        "failed_argument_checks": [],
        "latency_violations": [],
        "reason": None,
        "run_version": 1,
        "gates": [
            {
                "kind": "strict",
                "target": "additional_tools",
                "satisfied": True,
                "detail": "no unexpected tools",
                "expected": False,
                "observed": None,
            }
        ],
        # issue 6: every verdict's detail reconciles requests with executions
        "detail": {
            "reconciliation": {
                "counts": {
                    "clean": 1,
                    "errored": 0,
                    "paused": 0,
                    "requested_never_executed": 0,
                    "executed_without_request": 1,
                    "from_history": 0,
                },
                "requests_captured": False,
                "calls": [
                    {
                        "tool": "lookup_shipping_cutoff",
                        "state": "clean",
                        "span_id": span_id,
                        "call_id": None,
                        "request": None,
                        "matched_by": None,
                    }
                ],
            }
        },
        "schema_version": 1,
    }


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_an_errored_call_satisfies_nothing(scored: dict[str, Any], convention: str) -> None:
    verdict = scored["verdicts"][(scored["runs"][convention]["errored"], "cutoff")]
    assert verdict["passed"] is False and verdict["value"] == 0.0
    assert verdict["missing_tools"] == ["lookup_shipping_cutoff (errored)"]
    assert verdict["failed_argument_checks"] == [
        {"tool": "lookup_shipping_cutoff", "arguments": {"region": "north"}}
    ]
    assert verdict["reason"] == (
        "expected tool lookup_shipping_cutoff has no clean execution (errored); "
        'no clean lookup_shipping_cutoff execution to match arguments {"region": "north"}'
    )


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_strict_mode_fails_an_unexpected_tool_and_keeps_the_value(
    scored: dict[str, Any], convention: str
) -> None:
    verdict = scored["verdicts"][(scored["runs"][convention]["strict"], "cutoff")]
    assert verdict["passed"] is False and verdict["value"] == 0.5
    assert verdict["additional_tools"] == ["send_email"]
    assert verdict["reason"] == (
        'no clean lookup_shipping_cutoff execution matches arguments {"region": "north"} (1 clean call(s)); '
        "unexpected tools not allowed: send_email"
    )
    assert verdict["gates"][0]["kind"] == "strict" and verdict["gates"][0]["satisfied"] is False


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_team_member_executions_count_at_any_depth_unless_scope_is_leader(
    scored: dict[str, Any], convention: str
) -> None:
    run = scored["runs"][convention]["team"]
    everyone = scored["verdicts"][(run, "team-search")]
    assert everyone["passed"] is True and everyone["value"] == 1.0
    leader = scored["verdicts"][(run, "team-search-leader")]
    assert leader["passed"] is False and leader["value"] == 0.0
    assert leader["missing_tools"] == ["search"]
    assert leader["reason"] == (
        "expected tool search has no clean execution; 1 member execution(s) left out (scope: leader)"
    )


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_refused_paused_and_history_calls_never_satisfy(scored: dict[str, Any], convention: str) -> None:
    runs, verdicts = scored["runs"][convention], scored["verdicts"]
    refund = verdicts[(runs["refund"], "refund")]
    assert refund["passed"] is False and refund["value"] == 0.0
    assert refund["missing_tools"] == ["refund_order (requested but never executed)"]
    assert refund["reason"] == (
        "run has no tool executions; expected tool refund_order has no clean execution "
        "(requested but never executed)"
    )
    approval = verdicts[(runs["approval"], "approval")]
    assert approval["passed"] is False and approval["missing_tools"] == ["charge_card (paused)"]
    history = verdicts[(runs["history"], "history")]
    assert history["passed"] is False and history["missing_tools"] == ["lookup_shipping_cutoff"]


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_report_gives_rollout_statistics_per_task(scored: dict[str, Any], convention: str) -> None:
    cutoff = scored["report"][(f"{convention}:cutoff", "cutoff")]
    assert (cutoff["n_scored"], cutoff["n_passed"]) == (3, 1)
    assert cutoff["pass_rate"] == pytest.approx(1 / 3)
    assert cutoff["mean_value"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert cutoff["k"] == 2
    assert cutoff["pass_at_k"] == pytest.approx(1 - 1 / 3)  # 1 − C(2,2)/C(3,2)
    assert cutoff["pass_hat_k"] == pytest.approx(0.0)  # C(1,2)/C(3,2)
    assert cutoff["in_learning_zone"] is True
    assert scored["report"][(f"{convention}:refund", "refund")]["in_learning_zone"] is False


def test_verdicts_are_stored_once_per_run_spec_and_version(scored: dict[str, Any]) -> None:
    server: ServeProcess = scored["server"]
    assert server.query("SELECT count(*), count(DISTINCT (run_id, spec)) FROM verdicts") == [(16, 16)]
    again = _cli("score", "--db", str(server.db), "--spec", str(scored["spec_file"]))
    assert again.returncode == 1
    assert server.query("SELECT count(*) FROM verdicts") == [(16,)]  # re-scoring replaces
    rows = server.query("SELECT n_scored, n_passed FROM task_results WHERE task = 'gen_ai:cutoff'")
    assert rows == [(3, 1)]


def test_one_run_or_one_task_can_be_scored_alone(scored: dict[str, Any]) -> None:
    server: ServeProcess = scored["server"]
    run = scored["runs"]["gen_ai"]["pass"]
    alone = _cli(
        "score",
        "--db",
        str(server.db),
        "--spec",
        str(scored["spec_file"]),
        "--run",
        run,
        "--format",
        "json",
        "--no-store",
    )
    assert alone.returncode == 0, alone.stderr
    assert [v["run_id"] for v in json.loads(alone.stdout)] == [run]
    task = _cli(
        "score",
        "--db",
        str(server.db),
        "--spec",
        str(scored["spec_file"]),
        "--task",
        "openinference:refund",
        "--format",
        "json",
        "--no-store",
    )
    assert task.returncode == 1
    assert [v["spec"] for v in json.loads(task.stdout)] == ["refund"]


def test_a_broken_spec_scores_nothing_and_names_the_fix(scored: dict[str, Any], tmp_path: Path) -> None:
    server: ServeProcess = scored["server"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: oops\nexpected_tools: lookup_shipping_cutoff\n")
    result = _cli("score", "--db", str(server.db), "--spec", str(bad))
    assert result.returncode == 2 and result.stdout == ""
    assert str(bad) in result.stderr and "'oops'" in result.stderr and "expected_tools" in result.stderr
    assert "[lookup_shipping_cutoff]" in result.stderr and "Traceback" not in result.stderr

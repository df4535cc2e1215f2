"""Strict trajectories with parallel calls through the real path (issue 20): the OpenTelemetry SDK
exports over OTLP/gRPC to `tracescore serve --specs`, which scores online; then `tracescore score`
judges the same file offline. Two calls the model asked for in one chat span start in the "wrong"
order and strict still passes; the same calls asked for in two chat spans, in the wrong order, fail;
and the online and the offline verdicts agree."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from opentelemetry import trace
from opentelemetry.trace import Tracer

from scoring import Spec
from scoring.batch._plan import not_compiled
from tests._otel import provider
from tests._server import ServeProcess

BASE_NS = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z
MS = 1_000_000

SPEC = "name: weather-then-news\ntrajectory: {mode: strict, tools: [weather, news]}\n"


def _span(tracer: Tracer, parent: Any, name: str, attributes: dict[str, Any], start: int, end: int) -> None:
    span = tracer.start_span(name, context=parent, attributes=attributes, start_time=BASE_NS + start * MS)
    span.end(end_time=BASE_NS + end * MS)


def _chat(tracer: Tracer, parent: Any, calls: list[tuple[str, str]], start: int) -> None:
    parts = [{"type": "tool_call", "id": cid, "name": name, "arguments": {}} for name, cid in calls]
    messages = json.dumps([{"role": "assistant", "parts": parts}])
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": messages}
    _span(tracer, parent, "chat", attributes, start, start + 5)


def _tool(tracer: Tracer, parent: Any, name: str, call_id: str, start: int) -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": "{}",
        "gen_ai.tool.call.id": call_id,
    }
    _span(tracer, parent, f"execute_tool {name}", attributes, start, start + 10)


def _run(tracer: Tracer, run: str, rounds: list[list[tuple[str, str]]], starts: dict[str, int]) -> None:
    """One agent run: a chat span per round, then its tools at the given start times (ms)."""
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "desk",
        "gen_ai.agent.call.id": f"run-{run}",
        "tracescore.task.id": run,
    }
    root = tracer.start_span("desk.run", attributes=attributes, start_time=BASE_NS)
    parent = trace.set_span_in_context(root)
    for i, calls in enumerate(rounds):
        _chat(tracer, parent, calls, 100 * i)
        for name, call_id in calls:
            _tool(tracer, parent, name, call_id, starts[call_id])
    root.end(end_time=BASE_NS + 1000 * MS)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("rounds")
    spec_file = directory / "spec.yaml"
    spec_file.write_text(SPEC)
    server = ServeProcess(directory / "t.duckdb", extra_args=("--specs", str(spec_file))).start()
    try:
        tp = provider(server, "grpc")
        tracer = tp.get_tracer("tests")
        # One round asked for weather then news; news started 2 ms before weather.
        _run(tracer, "one-round", [[("weather", "c1"), ("news", "c2")]], {"c1": 12, "c2": 10})
        # Two rounds: news asked for (and run) first, weather in the next model turn.
        _run(tracer, "two-rounds", [[("news", "c1")], [("weather", "c2")]], {"c1": 10, "c2": 110})
        # The same as the first, with the tools in the order asked: passes either way.
        _run(tracer, "in-order", [[("weather", "c1"), ("news", "c2")]], {"c1": 10, "c2": 12})
        tp.force_flush()
        tp.shutdown()
    finally:
        assert server.stop() == 0, server.log()[-3000:]
    online = {
        task: json.loads(text)
        for task, text in server.query(
            "SELECT task_id, verdict FROM verdicts WHERE spec = 'weather-then-news'"
        )
    }
    command = ["score", "--db", str(server.db), "--spec", str(spec_file), "--format", "json"]
    score = subprocess.run(
        [sys.executable, "-m", "collector.cli", *command],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert score.stderr == "", score.stderr
    offline = {v["task"]: v for v in json.loads(score.stdout)}
    yield {"online": online, "offline": offline, "exit": score.returncode}


def _trajectory(verdict: dict[str, Any]) -> dict[str, Any]:
    (check,) = [c for c in verdict["checks"] if c["kind"] == "trajectory"]
    return dict(check)


def test_calls_of_one_round_started_in_the_wrong_order_pass(verdicts: dict[str, Any]) -> None:
    for source in ("online", "offline"):
        v = verdicts[source]["one-round"]
        check = _trajectory(v)
        assert (v["label"], check["satisfied"]) == ("pass", True), (source, check)
        assert check["observed"] == {"calls": ["news", "weather"], "parallel_rounds": [["news", "weather"]]}
        assert _trajectory(verdicts[source]["in-order"])["satisfied"] is True


def test_calls_of_different_rounds_in_the_wrong_order_fail(verdicts: dict[str, Any]) -> None:
    for source in ("online", "offline"):
        v = verdicts[source]["two-rounds"]
        check = _trajectory(v)
        assert v["label"] == "fail"
        assert check["detail"].startswith("trajectory (strict): position 1: expected weather, got news")
    assert verdicts["exit"] == 1  # a failed verdict fails the batch


def test_online_and_offline_verdicts_agree(verdicts: dict[str, Any]) -> None:
    assert set(verdicts["online"]) == set(verdicts["offline"]) == {"one-round", "two-rounds", "in-order"}
    for task, online in verdicts["online"].items():
        assert online == verdicts["offline"][task], task


def test_batch_scoring_sends_trajectories_to_the_python_judge() -> None:
    # Why `tracescore score` and online scoring agree: the set-based SQL does not compile trajectories.
    spec = Spec.model_validate(yaml.safe_load(SPEC))
    assert not_compiled(spec) == "trajectory"

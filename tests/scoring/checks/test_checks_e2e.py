"""Every check of the catalogue end to end: the real OpenTelemetry SDK → OTLP → `tracescore serve` →
stop → `tracescore score` / `report` on the file → the verdict JSON (issue 6, "Done when").

One server for the module; each scenario is one run (one trace) with its own task id, selected by one
spec. Span times are set explicitly so ordering, rounds and latency are exact.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, Tracer

from tests._otel import provider
from tests._server import ServeProcess

BASE_NS = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z
MS = 1_000_000

ORDER = {
    "type": "object",
    "required": ["sku", "qty"],
    "additionalProperties": False,
    "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
        "qty": {"type": "integer", "minimum": 1},
    },
}

SPECS = [
    {"name": "schema", "select": {"task": ["schema-ok", "schema-bad"]}, "schema": {"order": ORDER}},
    {
        "name": "schema-trace",
        "select": {"task": ["trace-gen-ai", "trace-openinference"]},
        "schema": "from_trace",
    },
    {
        "name": "rules",
        "select": {"task": ["rules-ok", "rules-bad"]},
        "argument_rules": {
            "quote": {
                "mode": "exact",
                "values": {
                    "region": {"any_of": ["North Region"], "normalize": True},
                    "filter.days": {"range": [1, 30]},
                    "note": {"optional": True},
                },
            }
        },
    },
    {
        "name": "calls",
        "select": {"task": ["calls-ok", "calls-bad"]},
        "calls": {"search": {"min": 1, "max": 2}},
    },
    {
        "name": "forbidden",
        "select": {"task": "forbidden"},
        "expected_tools": ["search"],
        "forbidden_tools": ["delete_all"],
    },
    {
        "name": "trajectory",
        "select": {"task": "trajectory"},
        "trajectory": {
            "mode": "unordered",
            "tools": [
                {"tool": "f", "values": {"x": {"any_of": [1, 2]}}},
                {"tool": "f", "values": {"x": {"any_of": [1]}}},
            ],
        },
    },
    {
        "name": "trajectory-strict",
        "select": {"task": "trajectory"},
        "trajectory": {"mode": "strict", "tools": ["f", "g"]},
    },
    {"name": "before", "select": {"task": ["before-ok", "before-bad"]}, "before": [["lookup", "quote"]]},
    {
        "name": "parallel",
        "select": {"task": ["parallel-requests", "parallel-overlap", "parallel-sequential"]},
        "parallel": {"tools": ["weather", "news"], "max_rounds": 1},
    },
    {"name": "no-calls", "select": {"task": "chat-only"}, "expect_no_tool_calls": True},
    {"name": "any-call", "select": {"task": ["chat-only", "calls-ok"]}, "expect_tool_call": True},
    {
        "name": "requests",
        "select": {"task": ["refused", "text-json"]},
        "require_executions_for_requests": True,
        "expected_tools": ["refund_order"],
    },
    {
        "name": "latency",
        "select": {"task": "latency"},
        "latency": {"p50_ms": {"search": 100}, "p95_ms": {"search": 250}},
    },
]


class Emitter:
    """Spans with explicit times (ms after BASE_NS) through the real SDK."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.parent: otel_context.Context | None = None

    def run(
        self, task: str, *, run: str | None = None, convention: str = "gen_ai", end_ms: int = 2000
    ) -> _Run:
        return _Run(self, task, run or task, convention, end_ms)

    def span(
        self, name: str, attributes: dict[str, Any], start_ms: float, end_ms: float, *, error: bool = False
    ) -> None:
        span = self.tracer.start_span(
            name, context=self.parent, attributes=attributes, start_time=BASE_NS + int(start_ms * MS)
        )
        if error:
            span.set_status(Status(StatusCode.ERROR, "boom"))
        span.end(end_time=BASE_NS + int(end_ms * MS))

    def tool(
        self,
        name: str,
        arguments: Any,
        start_ms: float,
        end_ms: float,
        *,
        call_id: str | None = None,
        convention: str = "gen_ai",
    ) -> None:
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        if convention == "gen_ai":
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": text,
            }
            if call_id:
                attributes["gen_ai.tool.call.id"] = call_id
        else:
            attributes = {"openinference.span.kind": "TOOL", "tool.name": name, "input.value": text}
        self.span(f"execute_tool {name}", attributes, start_ms, end_ms)

    def chat(
        self, start_ms: float, end_ms: float, *, parts: list[dict[str, Any]] | None = None, **extra: Any
    ) -> None:
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", **extra}
        if parts is not None:
            attributes["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": parts}])
        self.span("chat", attributes, start_ms, end_ms)


class _Run:
    def __init__(self, emitter: Emitter, task: str, run: str, convention: str, end_ms: int) -> None:
        self.emitter, self.task, self.run, self.convention, self.end_ms = (
            emitter,
            task,
            run,
            convention,
            end_ms,
        )
        self.span: trace.Span | None = None

    def __enter__(self) -> Emitter:
        run_id = f"run-{self.run}"
        if self.convention == "gen_ai":
            attributes = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "shop",
                "gen_ai.agent.call.id": run_id,
            }
        else:
            attributes = {"openinference.span.kind": "AGENT", "agent.name": "shop", "agno.run.id": run_id}
        attributes["tracescore.task.id"] = self.task
        self.span = self.emitter.tracer.start_span("shop.run", attributes=attributes, start_time=BASE_NS)
        self.emitter.parent = trace.set_span_in_context(self.span)
        return self.emitter

    def __exit__(self, *_: object) -> None:
        assert self.span is not None
        self.span.end(end_time=BASE_NS + self.end_ms * MS)
        self.emitter.parent = None


def _emit(emit: Emitter) -> None:
    with emit.run("schema-ok") as e:
        e.tool("order", {"sku": "ABC-1", "qty": 2}, 10, 20)
    with emit.run("schema-bad") as e:
        e.tool("order", {"sku": "ABC-1", "qty": 0}, 10, 20)
        e.tool("order", "sku=ABC-1", 30, 40)  # not JSON: fails the check, never crashes it
    definitions = [{"type": "function", "name": "order", "parameters": ORDER}]
    with emit.run("trace-gen-ai") as e:
        e.chat(0, 5, **{"gen_ai.tool.definitions": json.dumps(definitions)})
        e.tool("order", {"sku": "abc", "qty": 1}, 10, 20)
    with emit.run("trace-openinference", convention="openinference") as e:
        e.span(
            "llm",
            {
                "openinference.span.kind": "LLM",
                "llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": definitions[0]}),
            },
            0,
            5,
        )
        e.tool("order", {"sku": "ABC-7", "qty": 1}, 10, 20, convention="openinference")
    with emit.run("rules-ok") as e:
        e.tool("quote", {"region": "north region", "filter": {"days": 30}}, 10, 20)
    with emit.run("rules-bad") as e:
        e.tool("quote", {"region": "north", "filter": {"days": 30}, "limit": 5}, 10, 20)
    with emit.run("calls-ok") as e:
        e.tool("search", {}, 10, 20)
    with emit.run("calls-bad") as e:
        for i in range(3):
            e.tool("search", {"page": i}, 10 + 20 * i, 20 + 20 * i)
    with emit.run("forbidden") as e:
        e.tool("search", {}, 10, 20)
        e.tool("delete_all", {}, 30, 40)
    with emit.run("trajectory") as e:  # BFCL's counterexample M: first fit fails it, matching does not
        e.tool("f", {"x": 1}, 10, 20)
        e.tool("f", {"x": 2}, 30, 40)
    with emit.run("before-ok") as e:
        e.tool("lookup", {}, 10, 20)
        e.tool("quote", {}, 20, 30)
    with emit.run("before-bad") as e:
        e.tool("quote", {}, 10, 20)
        e.tool("lookup", {}, 30, 40)
    with emit.run("parallel-requests") as e:  # asked for in one chat span, run one after the other
        parts = [
            {"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Oslo"}},
            {"type": "tool_call", "id": "c2", "name": "news", "arguments": {"topic": "ski"}},
        ]
        e.chat(0, 5, parts=parts)
        e.tool("weather", {"city": "Oslo"}, 10, 20, call_id="c1")
        e.tool("news", {"topic": "ski"}, 30, 40, call_id="c2")
    with emit.run("parallel-overlap", convention="openinference") as e:
        e.tool("weather", {}, 10, 30, convention="openinference")
        e.tool("news", {}, 15, 25, convention="openinference")
    with emit.run("parallel-sequential", convention="openinference") as e:
        e.tool("weather", {}, 10, 20, convention="openinference")
        e.tool("news", {}, 20, 30, convention="openinference")
    with emit.run("chat-only") as e:
        e.chat(0, 5, parts=[{"type": "text", "content": "No tool is needed for that."}])
    with emit.run("refused") as e:
        e.chat(
            0,
            5,
            parts=[
                {"type": "tool_call", "id": "call_9", "name": "refund_order", "arguments": {"order": "A1"}}
            ],
        )
    with emit.run("text-json") as e:  # a provider without native tool calls writes the call as text
        text = 'I will refund it.\n```json\n{"name": "refund_order", "arguments": {"order": "A1"}}\n```'
        e.chat(0, 5, parts=[{"type": "text", "content": text}])
        e.tool("refund_order", {"order": "A1"}, 10, 20)
    for i, durations in enumerate(([50, 90], [120], [300])):  # three rollouts of one task
        with emit.run("latency", run=f"latency-{i}") as e:
            for j, duration in enumerate(durations):
                e.tool("search", {"n": j}, 10 + 400 * j, 10 + 400 * j + duration)


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
    directory = tmp_path_factory.mktemp("checks")
    server = ServeProcess(directory / "t.duckdb").start()
    try:
        tp = provider(server, "grpc")
        _emit(Emitter(tp.get_tracer("tests")))
        tp.force_flush()
        tp.shutdown()
    finally:
        assert server.stop() == 0
    spec_file = directory / "specs.json"
    spec_file.write_text(json.dumps(SPECS))
    score = _cli("score", "--db", str(server.db), "--spec", str(spec_file), "--format", "json")
    assert score.stderr == "", score.stderr
    report = _cli("report", "--db", str(server.db), "--spec", str(spec_file), "--format", "json")
    text_report = _cli("report", "--db", str(server.db), "--spec", str(spec_file))
    yield {
        "exit": score.returncode,
        "verdicts": {(v["run_id"].removeprefix("run-"), v["spec"]): v for v in json.loads(score.stdout)},
        "report": {(r["task"], r["spec"]): r for r in json.loads(report.stdout)},
        "text_report": text_report.stdout,
        "server": server,
    }


def checks(verdict: dict[str, Any]) -> list[tuple[str, str, bool, str]]:
    return [(c["kind"], c["target"], c["satisfied"], c["detail"]) for c in verdict["checks"]]


def test_scoring_fails_the_batch_and_scores_every_selected_run(scored: dict[str, Any]) -> None:
    assert scored["exit"] == 1
    assert len(scored["verdicts"]) == 24


def test_schema(scored: dict[str, Any]) -> None:
    ok = scored["verdicts"][("schema-ok", "schema")]
    assert (ok["passed"], ok["value"]) == (True, 1.0)
    assert checks(ok) == [("schema", "order", True, "1 clean order call(s) valid against its schema")]
    assert ok["checks"][0]["expected"] == ORDER
    bad = scored["verdicts"][("schema-bad", "schema")]
    assert (bad["passed"], bad["value"]) == (False, 0.0)
    [check] = bad["checks"]
    first, second = check["observed"]
    assert (first["pointer"], first["rule"], first["schema_pointer"]) == (
        "/qty",
        "minimum",
        "/properties/qty/minimum",
    )
    assert first["message"] == "0 is less than the minimum of 1"
    assert (second["pointer"], second["rule"], second["message"]) == (
        "",
        "json",
        "arguments are not valid JSON",
    )
    assert check["detail"] == (
        f"2 of 2 clean order call(s) break its schema: call {first['span_id']} at /qty breaks minimum: "
        "0 is less than the minimum of 1"
    )
    assert bad["reason"] == check["detail"]


def test_schema_from_trace_in_both_conventions(scored: dict[str, Any]) -> None:
    gen_ai = scored["verdicts"][("trace-gen-ai", "schema-trace")]
    [check] = gen_ai["checks"]
    assert (check["kind"], check["target"], check["satisfied"]) == ("schema", "order", False)
    assert check["expected"]["from_trace"]["attribute"] == "gen_ai.tool.definitions"
    assert check["expected"]["schema"] == ORDER
    assert [(f["pointer"], f["rule"]) for f in check["observed"]] == [("/sku", "pattern")]
    openinference = scored["verdicts"][("trace-openinference", "schema-trace")]
    assert checks(openinference) == [
        ("schema", "order", True, "1 clean order call(s) valid against its schema")
    ]
    assert openinference["checks"][0]["expected"]["from_trace"]["attribute"] == "llm.tools.*.tool.json_schema"


def test_argument_rules(scored: dict[str, Any]) -> None:
    ok = scored["verdicts"][("rules-ok", "rules")]
    [(kind, target, satisfied, detail)] = checks(ok)
    assert (kind, target, satisfied, ok["passed"]) == ("argument_rules", "quote", True, True)
    assert detail.startswith("clean quote call ") and detail.endswith(" meets every argument rule")
    bad = scored["verdicts"][("rules-bad", "rules")]
    [check] = bad["checks"]
    assert (check["satisfied"], bad["value"]) == (False, 0.0)
    assert check["observed"][0]["broken"] == [
        'region: "north" is not any of ["North Region"] (normalized)',
        "limit is not allowed (mode: exact)",
    ]
    assert check["expected"] == SPECS[2]["argument_rules"]["quote"]


def test_calls(scored: dict[str, Any]) -> None:
    assert checks(scored["verdicts"][("calls-ok", "calls")]) == [
        ("calls", "search", True, "search ran cleanly 1 time(s); expected between 1 and 2")
    ]
    bad = scored["verdicts"][("calls-bad", "calls")]
    assert checks(bad) == [
        ("calls", "search", False, "search ran cleanly 3 time(s); expected between 1 and 2")
    ]
    assert bad["checks"][0]["expected"] == {"min": 1, "max": 2}


def test_forbidden_tools_is_a_gate(scored: dict[str, Any]) -> None:
    v = scored["verdicts"][("forbidden", "forbidden")]
    assert (v["passed"], v["value"], v["label"]) == (False, 1.0, "fail")
    assert v["gates"] == [
        {
            "kind": "forbidden_tools",
            "target": "forbidden_tools",
            "satisfied": False,
            "detail": "forbidden tools ran: delete_all",
            "expected": ["delete_all"],
            "observed": ["delete_all"],
        }
    ]
    assert v["reason"] == "forbidden tools ran: delete_all"


def test_trajectory_matches_optimally(scored: dict[str, Any]) -> None:
    v = scored["verdicts"][("trajectory", "trajectory")]
    assert checks(v) == [
        (
            "trajectory",
            "unordered",
            True,
            "trajectory (unordered): 2 clean call(s) are the same calls in any order",
        )
    ]
    assert v["checks"][0]["observed"] == {
        "calls": ["f", "f"],
        "unmatched_expected": [],
        "unmatched_calls": [],
        "matched": 2,
    }
    strict = scored["verdicts"][("trajectory", "trajectory-strict")]
    assert strict["checks"][0]["detail"].startswith(
        "trajectory (strict): position 2: expected g, got f (call "
    )


def test_before(scored: dict[str, Any]) -> None:
    ok = scored["verdicts"][("before-ok", "before")]
    assert [(c[0], c[1], c[2]) for c in checks(ok)] == [("before", "lookup < quote", True)]
    bad = scored["verdicts"][("before-bad", "before")]
    assert checks(bad) == [
        ("before", "lookup < quote", False, "no clean lookup ended before a clean quote started")
    ]


def test_parallel_says_where_rounds_came_from(scored: dict[str, Any]) -> None:
    requests = scored["verdicts"][("parallel-requests", "parallel")]
    assert checks(requests) == [
        (
            "parallel",
            "weather,news",
            True,
            "parallel: weather, news ran in 1 round(s), at most 1 allowed; "
            "rounds from the chat spans that requested them",
        )
    ]
    assert requests["checks"][0]["observed"]["source"] == "requests"
    overlap = scored["verdicts"][("parallel-overlap", "parallel")]
    assert overlap["checks"][0]["observed"] == {
        "source": "intervals",
        "rounds": [["weather", "news"]],
        "missing": [],
    }
    assert overlap["passed"] is True
    sequential = scored["verdicts"][("parallel-sequential", "parallel")]
    assert checks(sequential) == [
        (
            "parallel",
            "weather,news",
            False,
            "parallel: weather, news ran in 2 round(s), at most 1 allowed; "
            "rounds from overlapping execution intervals",
        )
    ]


def test_expect_no_tool_calls_and_expect_tool_call(scored: dict[str, Any]) -> None:
    quiet = scored["verdicts"][("chat-only", "no-calls")]
    assert checks(quiet) == [("expect_no_tool_calls", "*", True, "no tool ran cleanly")]
    assert (quiet["passed"], quiet["value"]) == (True, 1.0)
    missing = scored["verdicts"][("chat-only", "any-call")]
    assert checks(missing) == [
        ("expect_tool_call", "*", False, "expected a tool call, but no tool ran cleanly")
    ]
    assert checks(scored["verdicts"][("calls-ok", "any-call")]) == [
        ("expect_tool_call", "*", True, "1 clean tool execution(s): search")
    ]


def test_require_executions_for_requests_and_reconciliation(scored: dict[str, Any]) -> None:
    refused = scored["verdicts"][("refused", "requests")]
    assert refused["passed"] is False and refused["value"] == 0.0
    assert refused["missing_tools"] == ["refund_order (requested but never executed)"]
    assert checks(refused)[1] == (
        "require_executions_for_requests",
        "requests",
        False,
        "1 requested tool call(s) never executed: refund_order (call_9)",
    )
    reconciliation = refused["detail"]["reconciliation"]
    assert reconciliation["counts"]["requested_never_executed"] == 1
    assert reconciliation["calls"] == [
        {
            "tool": "refund_order",
            "state": "requested_never_executed",
            "span_id": None,
            "call_id": "call_9",
            "request": {
                "span_id": reconciliation["calls"][0]["request"]["span_id"],
                "position": 0,
                "round": 1,
                "encoding": "gen_ai",
            },
            "matched_by": None,
        }
    ]


def test_calls_written_as_text_are_requests_marked_text_json(scored: dict[str, Any]) -> None:
    v = scored["verdicts"][("text-json", "requests")]
    assert (v["passed"], v["value"]) == (True, 1.0)
    reconciliation = v["detail"]["reconciliation"]
    assert reconciliation["counts"] == {
        "clean": 1,
        "errored": 0,
        "paused": 0,
        "requested_never_executed": 0,
        "executed_without_request": 0,
        "from_history": 0,
    }
    [call] = reconciliation["calls"]
    assert (call["tool"], call["state"], call["matched_by"]) == (
        "refund_order",
        "clean",
        "name_arguments_order",
    )
    assert call["request"]["encoding"] == "text_json"
    server: ServeProcess = scored["server"]
    assert server.query(
        "SELECT tool_name, arguments, encoding FROM tool_requests WHERE encoding = 'text_json'"
    ) == [("refund_order", '{"order":"A1"}', "text_json")]


def test_every_verdict_carries_the_reconciliation(scored: dict[str, Any]) -> None:
    assert all("reconciliation" in v["detail"] for v in scored["verdicts"].values())


def test_latency_percentiles_in_the_task_aggregates_and_report(scored: dict[str, Any]) -> None:
    runs = [scored["verdicts"][(f"latency-{i}", "latency")] for i in range(3)]
    assert all(v["checks"] == [] and v["passed"] is True for v in runs)
    assert runs[0]["reason"] == "latency percentiles are judged per task over its runs (tracescore report)"
    report = scored["report"][("latency", "latency")]
    assert report["n_scored"] == 3
    # the task's durations sorted: [50, 90, 120, 300]; nearest rank: p50 → 2nd, p95 → 4th
    assert report["latency"] == [
        {
            "tool": "search",
            "percentile": "p50",
            "bound_ms": 100,
            "observed_ms": 90.0,
            "n": 4,
            "satisfied": True,
            "window_start": None,
            "window_end": None,
        },
        {
            "tool": "search",
            "percentile": "p95",
            "bound_ms": 250,
            "observed_ms": 300.0,
            "n": 4,
            "satisfied": False,
            "window_start": None,
            "window_end": None,
        },
    ]
    assert report["latency_passed"] is False
    assert report["pass_rate"] == 1.0  # latency is judged beside the pass rate, not inside it
    text = scored["text_report"]
    assert "latency over each task's runs (nearest-rank percentiles):" in text
    assert "2 latency bound(s); 1 exceeded" in text

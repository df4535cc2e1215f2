"""The spec keys that say what the peers' checkers say (issue 31), end to end: the real OpenTelemetry
SDK → OTLP/HTTP → `tracescore serve --specs` (online verdicts) → DuckDB → `tracescore score` on the same
file. Online and batch verdicts must be equal, and each scenario's verdict is what docs/checks.md
promises; a refused (errored) call never satisfies anything.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, Tracer

from tests._otel import provider
from tests._server import ServeProcess

BASE_NS = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z
MS = 1_000_000

QUOTE = {"sku": {"any_of": ["A-1"]}, "qty": {"any_of": [2]}, "region": {"any_of": ["north"]}}
SPECS: list[dict[str, Any]] = [
    # pass_threshold: two of three checks met (value 0.667) passes at 0.5, fails at 0.8; a gate still
    # fails the run whatever its value.
    {
        "name": "half",
        "select": {"task": ["threshold", "threshold-gate"]},
        "expected_tools": ["search", "quote", "refund"],
        "forbidden_tools": ["delete_all"],
        "pass_threshold": 0.5,
    },
    {
        "name": "most",
        "select": {"task": "threshold"},
        "expected_tools": ["search", "quote", "refund"],
        "pass_threshold": 0.8,
    },
    # score: per_key. DeepEval's _compare_dicts (exact: keys met / union of keys) gives this run's call
    # 2/4 and Ragas's _get_arg_score (subset: keys met / reference keys) 2/3; the refused call with every
    # key right counts for nothing.
    {
        "name": "deepeval-keys",
        "select": {"task": "partial"},
        "argument_rules": {"quote": {"mode": "exact", "score": "per_key", "values": QUOTE}},
        "pass_threshold": 0.5,
    },
    {
        "name": "ragas-keys",
        "select": {"task": "partial"},
        "argument_rules": {"quote": {"score": "per_key", "values": QUOTE}},
        "pass_threshold": 0.7,
    },
    # A result bound to the call that met the item's argument rules, not to any call of the tool.
    {
        "name": "bound-result",
        "select": {"task": ["bound-ok", "bound-other-call", "bound-refused"]},
        "trajectory": {
            "mode": "superset",
            "tools": [
                {
                    "tool": "balance",
                    "values": {"account": {"any_of": ["A"]}},
                    "result": {"values": {"balance": {"range": [100, None]}}},
                }
            ],
        },
    },
    # Several result rules for one tool, each met by a different call, paired by a maximum matching
    # (first fit gives the first call to the first rule and has nothing left for the second).
    {
        "name": "two-results",
        "select": {"task": ["two-ok", "two-one-call", "two-refused"]},
        "results": {
            "lookup": [{"values": {"id": {"any_of": [1, 2]}}}, {"values": {"id": {"any_of": [1]}}}],
        },
    },
    # A result compared as text keeps its number text (BFCL's comparison); `value` compares JSON values.
    {
        "name": "as-text",
        "select": {"task": ["text-int", "text-float", "text-words"]},
        "results": {"add": {"text": {"any_of": ['{"sum": 5}', "done"]}}},
    },
    {
        "name": "as-value",
        "select": {"task": ["text-int", "text-float"]},
        "results": {"add": {"value": {"any_of": [{"sum": 5}]}}},
    },
    # BFCL's multi-turn rules: a result from this turn or an earlier one (conversation_scope), a turn
    # that checks nothing (unchecked), and checks of the whole conversation beside the turns.
    {
        "name": "conv-scoped",
        "select": {"task": "conv"},
        "turns": [
            {"results": {"create": {"values": {"id": {"any_of": ["f1"]}}}}},
            "unchecked",
            {
                "expected_tools": ["save"],
                "results": {"create": {"values": {"id": {"any_of": ["f1"]}}}},
                "conversation_scope": ["results"],
            },
        ],
        "conversation": {"calls": {"create": {"exactly": 1}}, "forbidden_tools": ["wipe"]},
    },
    {
        "name": "conv-this-turn",
        "select": {"task": "conv"},
        "turns": [
            {"results": {"create": {"values": {"id": {"any_of": ["f1"]}}}}},
            {"expected_tools": ["lookup"]},
            {"expected_tools": ["save"], "results": {"create": {"values": {"id": {"any_of": ["f1"]}}}}},
        ],
    },
    # multi_turn: bfcl sets each checked turn as BFCL does: some call made, results from any turn so far.
    {
        "name": "conv-bfcl",
        "select": {"task": "conv"},
        "multi_turn": "bfcl",
        "turns": [
            {"results": {"create": {"text": {"any_of": ['{"id": "f1"}']}}}},
            "unchecked",
            {"results": {"create": {"text": {"any_of": ['{"id": "f1"}']}}}},
        ],
    },
    # trajectory subsequence: the reference in order, other calls between.
    {
        "name": "in-order",
        "select": {"task": ["order-ok", "order-bad", "order-refused"]},
        "trajectory": {
            "mode": "subsequence",
            "tools": ["search", {"tool": "quote", "values": {"sku": {"any_of": ["A-1"]}}}, "refund"],
        },
    },
]


class Emitter:
    """Spans with explicit times (ms after BASE_NS) through the real SDK; tools with results."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.parent: otel_context.Context | None = None
        self.offset_ms = 0  # the current run's start: tool times are after it

    def tool(
        self,
        name: str,
        arguments: Any,
        start_ms: float,
        end_ms: float,
        *,
        result: str | None = None,
        error: bool = False,
    ) -> None:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": json.dumps(arguments),
        }
        if result is not None:
            attributes["gen_ai.tool.call.result"] = result
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=self.parent,
            attributes=attributes,
            start_time=_at(self.offset_ms + start_ms),
        )
        if error:
            span.set_status(Status(StatusCode.ERROR, "refused"))
        span.end(end_time=_at(self.offset_ms + end_ms))

    def run(self, task: str, run: str, **extra: Any) -> _Run:
        return _Run(self, task, run, extra)


def _at(ms: float) -> int:
    return BASE_NS + int(ms * MS)


class _Run:
    def __init__(self, emitter: Emitter, task: str, run: str, extra: dict[str, Any]) -> None:
        self.emitter, self.task, self.run, self.extra = emitter, task, run, extra
        self.span: trace.Span | None = None

    def __enter__(self) -> Emitter:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "shop",
            "gen_ai.agent.call.id": f"run-{self.run}",
            "tracescore.task.id": self.task,
            **self.extra,
        }
        start = self.extra.get("tracescore.turn.index", 0) * 10_000
        self.span = self.emitter.tracer.start_span("shop.run", attributes=attributes, start_time=_at(start))
        self.emitter.parent = trace.set_span_in_context(self.span)
        self.emitter.offset_ms = start
        return self.emitter

    def __exit__(self, *_: object) -> None:
        assert self.span is not None
        start = self.extra.get("tracescore.turn.index", 0) * 10_000
        self.span.end(end_time=_at(start + 2000))
        self.emitter.parent = None


def _emit(emit: Emitter) -> None:
    with emit.run("threshold", "threshold") as e:  # refund refused: 2 of 3 expected tools ran cleanly
        e.tool("search", {"q": "shoes"}, 10, 20)
        e.tool("quote", {"sku": "A-1"}, 30, 40)
        e.tool("refund", {"order": "o1"}, 50, 60, error=True)
    with emit.run("threshold-gate", "threshold-gate") as e:
        e.tool("search", {}, 10, 20)
        e.tool("quote", {}, 30, 40)
        e.tool("refund", {}, 50, 60)
        e.tool("delete_all", {}, 70, 80)

    with emit.run("partial", "partial") as e:
        e.tool("quote", {"sku": "A-1", "qty": 2, "region": "north"}, 10, 20, error=True)
        e.tool("quote", {"sku": "A-1", "qty": 3, "region": "north", "note": "gift"}, 30, 40)
        e.tool("quote", {"sku": "B-1"}, 50, 60)
    with emit.run("bound-ok", "bound-ok") as e:
        e.tool("balance", {"account": "B"}, 10, 20, result='{"balance": 5}')
        e.tool("balance", {"account": "A"}, 30, 40, result='{"balance": 150}')
    with emit.run("bound-other-call", "bound-other-call") as e:  # the big balance is B's, not A's
        e.tool("balance", {"account": "A"}, 10, 20, result='{"balance": 5}')
        e.tool("balance", {"account": "B"}, 30, 40, result='{"balance": 150}')
    with emit.run("bound-refused", "bound-refused") as e:
        e.tool("balance", {"account": "A"}, 10, 20, result='{"balance": 150}', error=True)
    with emit.run("two-ok", "two-ok") as e:
        e.tool("lookup", {}, 10, 20, result='{"id": 1}')
        e.tool("lookup", {}, 30, 40, result='{"id": 2}')
    with emit.run("two-one-call", "two-one-call") as e:  # one call cannot meet both rules
        e.tool("lookup", {}, 10, 20, result='{"id": 1}')
    with emit.run("two-refused", "two-refused") as e:
        e.tool("lookup", {}, 10, 20, result='{"id": 1}')
        e.tool("lookup", {}, 30, 40, result='{"id": 2}', error=True)
    with emit.run("text-int", "text-int") as e:
        e.tool("add", {}, 10, 20, result='{"sum": 5}')
    with emit.run("text-float", "text-float") as e:
        e.tool("add", {}, 10, 20, result='{"sum": 5.0}')
        e.tool("add", {}, 30, 40, result='{"sum": 5}', error=True)
    with emit.run("text-words", "text-words") as e:  # text that is not JSON is the text itself
        e.tool("add", {}, 10, 20, result="done")
    with emit.run("order-ok", "order-ok") as e:  # other calls between, and a quote of another sku
        e.tool("search", {}, 10, 20)
        e.tool("log", {}, 30, 40)
        e.tool("quote", {"sku": "B-2"}, 50, 60)
        e.tool("quote", {"sku": "A-1"}, 70, 80)
        e.tool("refund", {}, 90, 100)
    with emit.run("order-bad", "order-bad") as e:  # the quote came before the search
        e.tool("quote", {"sku": "A-1"}, 10, 20)
        e.tool("search", {}, 30, 40)
        e.tool("refund", {}, 50, 60)
    with emit.run("order-refused", "order-refused") as e:  # the quote in its place was refused
        e.tool("search", {}, 10, 20)
        e.tool("quote", {"sku": "A-1"}, 30, 40, error=True)
        e.tool("refund", {}, 50, 60)

    runs = [
        ("conv-ok", False, False, ["save"]),
        ("conv-refused", True, False, ["save"]),
        ("conv-wiped", False, True, ["save"]),
        ("conv-quiet", False, False, []),  # turn 3 calls nothing
    ]
    for conversation, create_failed, wipe, last in runs:
        turns = [["create"], ["chat"], last]
        for index, tools in enumerate(turns, 1):
            attributes = {"gen_ai.conversation.id": conversation, "tracescore.turn.index": index}
            if index == len(turns):
                attributes["tracescore.turn.last"] = True
            with emit.run("conv", f"{conversation}-{index}", **attributes) as e:
                for tool in tools:
                    if tool == "create":
                        e.tool("create", {}, 10, 20, result='{"id": "f1"}', error=create_failed)
                    elif tool == "chat":  # turn 2 checks nothing: whatever it does passes
                        e.tool("lookup", {}, 10, 20, error=True)
                    else:
                        e.tool("save", {"folder": "f1"}, 10, 20)
                        if wipe:
                            e.tool("wipe", {}, 30, 40)


def _key(verdict: dict[str, Any]) -> tuple[str, str]:
    return verdict["run_id"].removeprefix("run-"), verdict["spec"]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], dict[str, Any]]]:
    directory = tmp_path_factory.mktemp("parity")
    spec_file = directory / "specs.yaml"
    spec_file.write_text(yaml.safe_dump(SPECS))
    server = ServeProcess(directory / "t.duckdb", extra_args=("--specs", str(spec_file))).start()
    try:
        tp = provider(server, "http")
        _emit(Emitter(tp.get_tracer("tests.parity")))
        tp.force_flush()
        tp.shutdown()
        _await_conversations(server, CONVERSATIONS)
    finally:
        assert server.stop() == 0, server.log()
    online = {
        _key(json.loads(row[0])): json.loads(row[0]) for row in server.query("SELECT verdict FROM verdicts")
    }
    batch = _score(server.db, spec_file)
    assert {k: _comparable(v) for k, v in online.items()} == {k: _comparable(v) for k, v in batch.items()}
    yield batch


CONVERSATIONS = 4 * 3  # four conversations, three conversation specs


def _await_conversations(server: ServeProcess, expected: int) -> None:
    """Online, a conversation is judged when its marked last turn completes: wait for the verdicts."""
    deadline = time.monotonic() + 30
    url = f"http://127.0.0.1:{server.http_port}/api/v1/verdicts?task=conv&limit=100"
    while time.monotonic() < deadline:
        with urllib.request.urlopen(url, timeout=10) as answer:
            if sum(1 for v in json.loads(answer.read()) if v.get("conversation_id")) >= expected:
                return
        time.sleep(0.1)
    raise AssertionError(f"conversation verdicts missing:\n{server.log()}")


def _comparable(verdict: dict[str, Any]) -> dict[str, Any]:
    return {
        k: verdict[k]
        for k in ("passed", "value", "label", "checks", "gates", "reason", "turns")
        if k in verdict
    }


def _score(db: Path, spec_file: Path) -> dict[tuple[str, str], dict[str, Any]]:
    command = ["score", "--db", str(db), "--spec", str(spec_file), "--format", "json"]
    score = subprocess.run(
        [sys.executable, "-m", "collector.cli", *command],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert score.returncode in (0, 1) and score.stderr == "", score.stderr
    return {_key(v): v for v in json.loads(score.stdout)}


def test_pass_threshold_passes_a_run_whose_value_reaches_it(verdicts: dict[Any, dict[str, Any]]) -> None:
    half, most = verdicts[("threshold", "half")], verdicts[("threshold", "most")]
    assert half["value"] == most["value"] == pytest.approx(2 / 3)
    assert (half["passed"], half["label"]) == (True, "pass")
    assert (most["passed"], most["label"]) == (False, "fail")
    assert "expected tool refund has no clean execution (errored)" in half["reason"]
    assert "value 0.6667 reaches pass_threshold 0.5" in half["reason"]
    assert "value 0.6667 is below pass_threshold 0.8" in most["reason"]


def test_pass_threshold_never_lifts_a_failed_gate(verdicts: dict[Any, dict[str, Any]]) -> None:
    gated = verdicts[("threshold-gate", "half")]
    assert gated["value"] == 1.0 and gated["passed"] is False
    assert [g["kind"] for g in gated["gates"] if not g["satisfied"]] == ["forbidden_tools"]


def test_trajectory_subsequence_allows_calls_between_but_keeps_the_order(
    verdicts: dict[Any, dict[str, Any]],
) -> None:
    ok = verdicts[("order-ok", "in-order")]
    assert ok["passed"] is True
    [check] = ok["checks"]
    assert check["kind"] == "trajectory" and check["target"] == "subsequence"
    assert check["observed"]["matched"] == 3
    bad = verdicts[("order-bad", "in-order")]
    assert bad["passed"] is False
    assert (
        'position 2: expected quote {"sku": {"any_of": ["A-1"]}}, no matching clean call after call'
        in (bad["reason"])
    )
    refused = verdicts[("order-refused", "in-order")]
    assert refused["passed"] is False
    assert refused["checks"][0]["observed"]["unmatched_expected"] == [
        'quote {"sku": {"any_of": ["A-1"]}}',
        "refund",
    ]


def test_per_key_score_gives_partial_credit_as_deepeval_and_ragas(
    verdicts: dict[Any, dict[str, Any]],
) -> None:
    deepeval, ragas = verdicts[("partial", "deepeval-keys")], verdicts[("partial", "ragas-keys")]
    assert (deepeval["value"], deepeval["passed"]) == (0.5, True)
    assert (ragas["value"], ragas["passed"]) == (pytest.approx(2 / 3), False)
    [check] = deepeval["checks"]
    assert check["satisfied"] is False and check["expected"]["score"] == "per_key"
    assert check["observed"]["score"] == 0.5
    assert [c["score"] for c in check["observed"]["calls"]] == [0.5, 0.0]  # the refused call is not one
    assert "(per-key score 0.5)" in check["detail"]


def test_a_trajectory_items_result_is_bound_to_the_call_it_matched(
    verdicts: dict[Any, dict[str, Any]],
) -> None:
    assert verdicts[("bound-ok", "bound-result")]["passed"] is True
    other = verdicts[("bound-other-call", "bound-result")]
    assert other["passed"] is False
    assert (
        'expected call(s) with no matching clean execution: balance {"account": {"any_of": ["A"]}} returning '
        '{"values": {"balance": {"range": [100, null]}}}' in other["reason"]
    )
    assert verdicts[("bound-refused", "bound-result")]["passed"] is False


def test_several_result_rules_need_a_call_each(verdicts: dict[Any, dict[str, Any]]) -> None:
    ok = verdicts[("two-ok", "two-results")]
    assert ok["passed"] is True
    [check] = ok["checks"]
    assert check["kind"] == "results" and len(check["expected"]) == 2
    first, second = check["observed"]["paired"]
    assert first != second and None not in (first, second)
    one = verdicts[("two-one-call", "two-results")]
    assert one["passed"] is False
    assert (
        "1 of 2 result rules of lookup met by distinct clean calls (1 clean call(s); rule(s) 2 unmet"
        in (one["reason"])
    )
    assert verdicts[("two-refused", "two-results")]["passed"] is False


def test_a_result_compared_as_text_keeps_number_text(verdicts: dict[Any, dict[str, Any]]) -> None:
    assert verdicts[("text-int", "as-text")]["passed"] is True
    assert verdicts[("text-words", "as-text")]["passed"] is True
    floated = verdicts[("text-float", "as-text")]
    assert floated["passed"] is False
    assert 'text: "{\\"sum\\": 5.0}" is not any of' in floated["reason"]
    assert verdicts[("text-int", "as-value")]["passed"] is True
    assert verdicts[("text-float", "as-value")]["passed"] is True  # JSON values: 5.0 is 5


def _conversation(verdicts: dict[Any, dict[str, Any]], conversation: str, spec: str) -> dict[str, Any]:
    [verdict] = [
        v for (run, s), v in verdicts.items() if s == spec and v.get("conversation_id") == conversation
    ]
    return verdict


def test_a_turn_may_take_its_results_from_earlier_turns(verdicts: dict[Any, dict[str, Any]]) -> None:
    ok = _conversation(verdicts, "conv-ok", "conv-scoped")
    assert ok["passed"] is True, ok["reason"]
    assert [t["passed"] for t in ok["turns"]] == [True, True, True]
    assert ok["turns"][1]["checks"] == []  # unchecked: its refused lookup fails nothing
    # Without conversation_scope the result of turn 1 is not seen in turn 3; turn 2's lookup was refused.
    this_turn = _conversation(verdicts, "conv-ok", "conv-this-turn")
    assert [t["passed"] for t in this_turn["turns"]] == [True, False, False]
    # A refused create satisfies nothing, in its turn or any later one, nor the conversation's count.
    refused = _conversation(verdicts, "conv-refused", "conv-scoped")
    assert [t["passed"] for t in refused["turns"]] == [False, True, False]
    assert "conversation failed: create ran cleanly 0 time(s); expected exactly 1" in refused["reason"]


def test_conversation_checks_span_every_turn(verdicts: dict[Any, dict[str, Any]]) -> None:
    ok = _conversation(verdicts, "conv-ok", "conv-scoped")
    assert [(c["kind"], c["target"], c["satisfied"]) for c in ok["checks"]] == [
        ("turns", "count", True),
        ("calls", "create", True),
    ]
    wiped = _conversation(verdicts, "conv-wiped", "conv-scoped")
    assert [t["passed"] for t in wiped["turns"]] == [True, True, True]
    assert wiped["passed"] is False
    assert [g["kind"] for g in wiped["gates"] if not g["satisfied"]] == ["forbidden_tools"]
    assert "conversation failed: " in wiped["reason"]


def test_multi_turn_bfcl_judges_each_checked_turn_as_bfcl(verdicts: dict[Any, dict[str, Any]]) -> None:
    ok = _conversation(verdicts, "conv-ok", "conv-bfcl")
    assert ok["passed"] is True, ok["reason"]
    assert [c["kind"] for c in ok["turns"][2]["checks"]] == ["expect_tool_call", "results"]
    # BFCL's multi_turn:empty_turn_model_response: turn 3's result is there from turn 1, but it made no call.
    quiet = _conversation(verdicts, "conv-quiet", "conv-bfcl")
    assert [t["passed"] for t in quiet["turns"]] == [True, True, False]
    assert "expected a tool call, but no tool ran cleanly" in quiet["turns"][2]["reason"]
    refused = _conversation(verdicts, "conv-refused", "conv-bfcl")
    assert [t["passed"] for t in refused["turns"]] == [False, True, False]

"""`scoring.judge` on hand-built evidence: one test per rule of issue 4, each with the smallest case.

Default profile: "The evidence rule and the checks". Profile reliability_eval: "Parity profile", with
the rule numbers (R8-R16) of ../shared/reference/agno-scorer-semantics.md.
"""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest

from scoring import Evidence, Execution, Request, Run, Spec, Verdict, judge

_spans = count(1)


def run(run_id: str = "run-1", task: str | None = "task-1") -> Run:
    return Run(
        run_id=run_id,
        trace_id="trace-1",
        task_id=task,
        service_name="shop-agent",
        agent_name="leader",
        session_id=None,
        version=1,
        attributes={},
    )


def ex(
    tool: str,
    arguments: Any = None,
    *,
    error: bool = False,
    paused: bool = False,
    history: bool = False,
    valid: bool = True,
    ms: float = 10.0,
    path: str | None = "leader",
) -> Execution:
    return Execution(
        span_id=f"span-{next(_spans)}",
        tool_name=tool,
        arguments=arguments,
        arguments_valid=valid,
        error=error,
        paused=paused,
        from_history=history,
        duration_ms=ms,
        agent_path=path,
        call_id=None,
    )


def req(tool: str, *, executed: bool = False, path: str | None = "leader") -> Request:
    return Request(tool_name=tool, call_id=None, executed=executed, agent_path=path)


def evidence(*items: Execution | Request) -> Evidence:
    return Evidence(
        run(),
        executions=tuple(i for i in items if isinstance(i, Execution)),
        requests=tuple(i for i in items if isinstance(i, Request)),
    )


def spec(**fields: Any) -> Spec:
    return Spec.model_validate({"name": "s", **fields})


def reliability(**fields: Any) -> Spec:
    return spec(profile="reliability_eval", **fields)


def verdict(spec_: Spec, *items: Execution | Request) -> Verdict:
    return judge(spec_, evidence(*items))


def kinds(v: Verdict) -> list[tuple[str, str, bool]]:
    return [(c.kind, c.target, c.satisfied) for c in v.checks]


# === default profile: the evidence rule ==============================================================


def test_a_clean_execution_satisfies_an_expected_tool() -> None:
    v = verdict(spec(expected_tools=["search"]), ex("search"))
    assert (v.passed, v.value, v.label, v.reason) == (True, 1.0, "pass", None)
    assert kinds(v) == [("expected_tool", "search", True)]
    assert v.profile == "default"
    assert (v.run_id, v.trace_id, v.task, v.spec) == ("run-1", "trace-1", "task-1", "s")
    assert v.spec_fingerprint == spec(expected_tools=["search"]).fingerprint


@pytest.mark.parametrize(
    "execution",
    [ex("search", error=True), ex("search", paused=True), ex("search", history=True)],
    ids=["errored", "paused", "from_history"],
)
def test_only_clean_executions_are_evidence(execution: Execution) -> None:
    v = verdict(spec(expected_tools=["search"], arguments={"search": {}}), execution)
    assert (v.passed, v.value) == (False, 0.0)
    assert kinds(v) == [("expected_tool", "search", False), ("arguments", "search", False)]


def test_a_nameless_execution_is_never_clean_nor_additional() -> None:
    nameless = ex("")
    assert not nameless.clean
    v = verdict(spec(expected_tools=["search"], allow_additional=False), nameless, ex("search"))
    assert v.passed is True
    assert v.additional_tools == ()


def test_requests_never_satisfy() -> None:
    v = verdict(spec(expected_tools=["search"], arguments={"search": {}}), req("search"))
    assert (v.passed, v.value) == (False, 0.0)
    assert v.missing_tools == ("search (requested but never executed)",)


def test_duplicate_expected_tools_count_once() -> None:
    assert kinds(verdict(spec(expected_tools=["a", "a"]), ex("a"))) == [("expected_tool", "a", True)]
    v = verdict(spec(expected_tools=["a", "a"]))
    assert kinds(v) == [("expected_tool", "a", False)]
    assert v.missing_tools == ("a",)


def test_order_does_not_matter() -> None:
    v = verdict(spec(expected_tools=["a", "b"]), ex("b"), ex("a"))
    assert (v.passed, v.value) == (True, 1.0)


# === arguments ======================================================================================


@pytest.mark.parametrize(
    ("expected", "call", "satisfied"),
    [
        ({"q": "x"}, {"q": "x", "limit": 5}, True),  # extra keys in the call are fine
        ({"q": "x"}, {"q": "y"}, False),
        ({"f": {"a": 1}}, {"f": {"a": 1, "b": 2}}, False),  # nested values equal in full
        ({"f": {"a": 1, "b": 2}}, {"f": {"b": 2, "a": 1}}, True),
        ({"ids": [1, 2]}, {"ids": [1, 2]}, True),
        ({"ids": [1, 2]}, {"ids": [2, 1]}, False),  # lists in order
        ({"ids": [1, 2]}, {"ids": [1, 2, 3]}, False),
        ({"n": 1}, {"n": 1.0}, True),  # 1 == 1.0
        ({"n": 1.0}, {"n": 1}, True),
        ({"flag": True}, {"flag": 1}, False),  # true is not 1
        ({"n": 1}, {"n": True}, False),
        ({"flag": False}, {"flag": 0}, False),
        ({"n": "5"}, {"n": 5}, False),  # "5" is not 5
        ({"n": 5}, {"n": "5"}, False),
        ({"k": None}, {"k": None}, True),
        ({"k": None}, {}, False),  # the key must be present, even for null
        ({"k": None}, {"k": 0}, False),
        ({"f": {"a": [1, {"b": True}]}}, {"f": {"a": [1.0, {"b": True}]}}, True),
    ],
)
def test_argument_subset_match(expected: dict[str, Any], call: dict[str, Any], satisfied: bool) -> None:
    v = verdict(spec(arguments={"t": expected}), ex("t", call))
    assert kinds(v) == [("arguments", "t", satisfied)]
    assert v.passed is satisfied


def test_some_clean_call_must_match_and_unclean_calls_do_not() -> None:
    s = spec(arguments={"t": {"q": "x"}})
    assert verdict(s, ex("t", {"q": "y"}), ex("t", {"q": "x"})).passed is True
    assert verdict(s, ex("t", {"q": "y"}), ex("t", {"q": "x"}, error=True)).passed is False
    assert verdict(s, ex("other", {"q": "x"})).passed is False  # exactly that tool's calls


def test_one_call_may_satisfy_several_specs() -> None:
    v = verdict(
        spec(arguments={"t": [{"q": "x"}, {"limit": 5}, {"q": "x"}]}), ex("t", {"q": "x", "limit": 5})
    )
    assert kinds(v) == [("arguments", "t", True)] * 3
    assert (v.passed, v.value) == (True, 1.0)


def test_each_argument_spec_is_one_check() -> None:
    v = verdict(spec(arguments={"t": [{"q": "x"}, {"q": "y"}]}), ex("t", {"q": "x"}))
    assert kinds(v) == [("arguments", "t", True), ("arguments", "t", False)]
    assert (v.passed, v.value) == (False, 0.5)
    assert v.failed_argument_checks == ({"tool": "t", "arguments": {"q": "y"}},)


@pytest.mark.parametrize(
    "call",
    [ex("t", {"q": 1}), ex("t", None), ex("t", [1, 2]), ex("t", None, valid=False)],
    ids=["arguments", "not captured", "not an object", "not JSON"],
)
def test_empty_spec_is_satisfied_by_any_clean_call(call: Execution) -> None:
    assert verdict(spec(arguments={"t": {}}), call).passed is True


def test_empty_spec_is_not_satisfied_without_a_clean_call() -> None:
    assert verdict(spec(arguments={"t": {}}), ex("t", error=True)).passed is False


def test_arguments_that_were_not_json_never_match_a_spec_with_keys() -> None:
    v = verdict(spec(arguments={"t": {"q": "x"}}), ex("t", {"q": "x"}, valid=False))
    assert kinds(v) == [("arguments", "t", False)]


# === strict mode ====================================================================================


def test_strict_mode_fails_on_a_clean_unexpected_tool_but_leaves_the_value() -> None:
    v = verdict(spec(expected_tools=["a"], allow_additional=False), ex("a"), ex("z"), ex("b"))
    assert (v.passed, v.value, v.label) == (False, 1.0, "fail")
    assert v.additional_tools == ("b", "z")
    assert v.reason == "unexpected tools not allowed: b, z"
    assert [(g.kind, g.satisfied) for g in v.gates] == [("strict", False)]
    assert kinds(v) == [("expected_tool", "a", True)]  # a gate, not a check


def test_lenient_mode_reports_but_allows_unexpected_tools() -> None:
    v = verdict(spec(expected_tools=["a"]), ex("a"), ex("z"))
    assert (v.passed, v.value, v.gates) == (True, 1.0, ())
    assert v.additional_tools == ("z",)


def test_names_in_arguments_are_not_additional() -> None:
    v = verdict(spec(expected_tools=["a"], arguments={"b": {}}, allow_additional=False), ex("a"), ex("b"))
    assert v.passed is True
    assert v.additional_tools == ()


def test_arguments_only_strict_mode_polices_other_tools() -> None:
    v = verdict(spec(arguments={"b": {}}, allow_additional=False), ex("b"), ex("z"))
    assert (v.passed, v.additional_tools) == (False, ("z",))


@pytest.mark.parametrize(
    "attempt",
    [ex("z", error=True), ex("z", paused=True), req("z")],
    ids=["errored", "paused", "requested but never executed"],
)
def test_strict_counts_attempts_fails_on_unclean_unexpected_tools(attempt: Execution | Request) -> None:
    attempts = spec(expected_tools=["a"], allow_additional=False, strict_counts="attempts")
    v = verdict(attempts, ex("a"), attempt)
    assert (v.passed, v.value, v.additional_tools) == (False, 1.0, ("z",))
    executions = spec(expected_tools=["a"], allow_additional=False, strict_counts="executions")
    assert verdict(executions, ex("a"), attempt).passed is True
    assert verdict(spec(expected_tools=["a"], allow_additional=False), ex("a"), attempt).passed is True


@pytest.mark.parametrize(
    "item",
    [ex("z", error=True, history=True), req("z", executed=True), ex("", error=True), req("")],
    ids=["history", "executed request", "nameless execution", "nameless request"],
)
def test_strict_counts_attempts_ignores_what_is_not_an_attempt_of_this_run(item: Execution | Request) -> None:
    attempts = spec(expected_tools=["a"], allow_additional=False, strict_counts="attempts")
    assert verdict(attempts, ex("a"), item).passed is True


def test_strict_mode_does_not_check_counts() -> None:
    v = verdict(spec(expected_tools=["a"], allow_additional=False), ex("a"), ex("a"), ex("a"))
    assert (v.passed, v.value) == (True, 1.0)


# === latency ========================================================================================


def test_latency_one_check_per_bound_that_applies() -> None:
    s = spec(latency={"max_ms": {"search": 100, "*": 50, "never_called": 1}})
    v = verdict(s, ex("search", ms=150), ex("search", ms=90), ex("fetch", ms=60), ex("other", ms=10))
    assert kinds(v) == [("latency", "search", False), ("latency", "*", False)]
    assert [(x["tool"], x["duration_ms"], x["max_ms"]) for x in v.latency_violations] == [
        ("search", 150, 100),
        ("fetch", 60, 50),
    ]
    assert (v.passed, v.value) == (False, 0.0)


def test_latency_within_bounds_passes_and_equal_is_not_slower() -> None:
    v = verdict(spec(latency={"max_ms": {"search": 100}}), ex("search", ms=100), ex("fetch", ms=10_000))
    assert kinds(v) == [("latency", "search", True)]
    assert (v.passed, v.latency_violations) == (True, ())


def test_latency_only_clean_executions_can_be_slow() -> None:
    s = spec(expected_tools=["search"], latency={"max_ms": {"*": 50}})
    v = verdict(s, ex("search", ms=10), ex("search", ms=900, error=True), ex("x", ms=900, history=True))
    assert kinds(v) == [("expected_tool", "search", True), ("latency", "*", True)]
    assert v.latency_violations == ()


def test_latency_violation_lowers_the_value() -> None:
    s = spec(expected_tools=["a"], latency={"max_ms": {"a": 50}})
    v = verdict(s, ex("a", ms=80))
    assert (v.passed, v.value) == (False, 0.5)


# === value, passed and reason =======================================================================


def test_value_is_satisfied_checks_over_checks() -> None:
    s = spec(expected_tools=["a", "b", "c"], arguments={"a": [{"q": 1}, {"q": 2}]})
    v = verdict(s, ex("a", {"q": 1}), ex("c", error=True))
    assert v.value == pytest.approx(2 / 5)
    assert v.passed is False


def test_reason_order_without_executions() -> None:
    s = spec(
        expected_tools=["a"], arguments={"b": {"x": 1}}, allow_additional=False, strict_counts="attempts"
    )
    v = verdict(s, req("z"))
    assert v.reason is not None
    assert v.reason.split("; ") == [
        "run has no tool executions",
        "expected tool a has no clean execution",
        'no clean b execution to match arguments {"x": 1}',
        "unexpected tools not allowed: z",
    ]


def test_reason_order_with_executions() -> None:
    s = spec(
        expected_tools=["a", "gone"],
        arguments={"a": {"q": 2}},
        allow_additional=False,
        latency={"max_ms": {"*": 10}},
    )
    v = verdict(s, ex("a", {"q": 1}, ms=50), ex("zz", ms=5), ex("yy", ms=20))
    assert v.reason is not None
    parts = v.reason.split("; ")
    assert len(parts) == 4
    assert parts[0] == "expected tool gone has no clean execution"
    assert parts[1].startswith('no clean a execution matches arguments {"q": 2}')
    assert parts[2] == "unexpected tools not allowed: yy, zz"  # sorted
    assert parts[3].startswith("2 of 3 other tools execution(s) slower than 10 ms")
    assert v.value == pytest.approx(1 / 4)


@pytest.mark.parametrize(
    ("items", "missing"),
    [
        ((), "a"),
        ((ex("a", error=True),), "a (errored)"),
        ((ex("a", paused=True),), "a (paused)"),
        ((req("a"),), "a (requested but never executed)"),
        ((req("a", executed=True), ex("a", error=True)), "a (errored)"),
        (
            (ex("a", error=True), ex("a", paused=True), req("a")),
            "a (errored; paused; requested but never executed)",
        ),
        ((ex("a", error=True, history=True),), "a"),  # earlier turns are not this run's attempts
        ((ex("b", error=True), req("c")), "a"),  # other tools' attempts
    ],
)
def test_missing_tools_explain_attempts(items: tuple[Execution | Request, ...], missing: str) -> None:
    v = verdict(spec(expected_tools=["a"]), *items)
    assert v.missing_tools == (missing,)
    assert v.reason is not None
    assert f"expected tool a has no clean execution{missing[1:]}" in v.reason


def test_run_with_no_tool_executions_says_so() -> None:
    v = verdict(spec(expected_tools=["a"]))
    assert v.reason == "run has no tool executions; expected tool a has no clean execution"
    assert verdict(spec(expected_tools=["a"]), ex("a", error=True)).reason == (
        "expected tool a has no clean execution (errored)"
    )


# === scope ==========================================================================================


def test_scope_leader_counts_only_the_outermost_agent() -> None:
    items = (ex("lead", path="leader"), ex("member_tool", path="leader/researcher"), ex("x", path=None))
    everyone = verdict(spec(expected_tools=["lead", "member_tool"]), *items)
    assert (everyone.passed, everyone.reason) == (True, None)
    leader = verdict(spec(expected_tools=["lead", "member_tool"], scope="leader"), *items)
    assert (leader.passed, leader.value) == (False, 0.5)
    assert leader.reason == (
        "expected tool member_tool has no clean execution; 1 member execution(s) left out (scope: leader)"
    )


def test_scope_all_counts_members_at_every_depth() -> None:
    assert verdict(spec(expected_tools=["deep"]), ex("deep", path="leader/team/member")).passed is True


def test_scope_leader_does_not_police_members() -> None:
    s = spec(expected_tools=["a"], allow_additional=False, strict_counts="attempts", scope="leader")
    v = verdict(s, ex("a"), ex("z", path="leader/m"), req("y", path="leader/m"))
    assert v.passed is True
    assert v.reason == "1 member execution(s) left out (scope: leader)"


# === profile reliability_eval (agno ReliabilityEval parity) ==========================================


def test_reliability_is_strict_by_default_and_has_no_value() -> None:  # R1, R16
    v = verdict(reliability(expected_tools=["a"]), ex("a"), ex("b"))
    assert (v.passed, v.value, v.label, v.profile) == (False, None, "fail", "reliability_eval")
    assert v.additional_tools == ("b",)
    assert verdict(reliability(expected_tools=["a"]), ex("a")).value is None


def test_reliability_lenient_mode_lists_attempts_and_passes() -> None:  # R9, D3
    v = verdict(reliability(expected_tools=["a"], allow_additional=True), ex("a"), ex("b", error=True))
    assert (v.passed, v.additional_tools) == (True, ("b",))


@pytest.mark.parametrize("attempt", [ex("b", error=True), ex("b", paused=True)], ids=["errored", "paused"])
def test_reliability_strict_mode_counts_attempts(attempt: Execution) -> None:  # R9
    v = verdict(reliability(expected_tools=["a"]), ex("a"), attempt)
    assert (v.passed, v.additional_tools) == (False, ("b",))


def test_reliability_failed_calls_are_one_entry_per_execution() -> None:  # R11
    v = verdict(reliability(expected_tools=["a"]), ex("a"), ex("b"), ex("b", error=True))
    assert v.additional_tools == ("b", "b")


def test_reliability_request_only_names_fail_strict_mode() -> None:  # R12
    v = verdict(reliability(expected_tools=["a"]), ex("a"), req("z"), req("c"), req("a"))
    assert (v.passed, v.additional_tools) == (False, ("c", "z"))  # sorted, after executions


def test_reliability_a_requested_name_with_an_execution_counts_once() -> None:  # R12
    v = verdict(reliability(expected_tools=["a"]), ex("a"), ex("b", error=True), req("b", executed=True))
    assert v.additional_tools == ("b",)


def test_reliability_tool_named_only_in_arguments_is_unexpected() -> None:  # R15, D4
    v = verdict(reliability(expected_tools=["a"], arguments={"b": {}}), ex("a"), ex("b"))
    assert v.passed is False
    assert v.additional_tools == ("b",)
    assert kinds(v) == [("expected_tool", "a", True), ("arguments", "b", True)]


@pytest.mark.parametrize(
    "items",
    [(), (ex("a"),), (ex("a", error=True), ex("b", paused=True), req("c"))],
    ids=["no-calls", "a-clean-call", "only-failed-attempts"],
)
def test_reliability_with_no_expectations_passes_every_run(items: tuple[Any, ...]) -> None:  # R2
    """As Agno's ReliabilityEval with expected_tool_calls=None and no arguments: nothing is policed."""
    v = verdict(reliability(), *items)
    assert (v.passed, v.label, v.value, v.checks, v.gates) == (True, "pass", None, (), ())
    assert (v.missing_tools, v.additional_tools, v.failed_argument_checks) == ((), (), ())
    assert v.reason is not None
    assert v.reason.startswith("the spec checks nothing: every run passes under profile reliability_eval")


def test_reliability_empty_expected_tools_means_no_tool_may_run() -> None:  # R9, D7
    s = reliability(expected_tools=[])
    assert verdict(s).passed is True
    assert verdict(s, ex("a")).passed is False
    assert verdict(s, req("a")).passed is False
    assert verdict(s, ex("a", error=True)).passed is False


def test_reliability_no_expected_tools_polices_nothing() -> None:  # R9, R12, D5
    s = reliability(arguments={"a": {"q": 1}})
    v = verdict(s, ex("a", {"q": 1}), ex("z"), ex("y", error=True), req("x"))
    assert (v.passed, v.additional_tools, v.gates) == (True, (), ())


def test_reliability_empty_spec_list_passes_when_the_tool_ran_cleanly() -> None:  # R14, D8
    s = reliability(arguments={"a": []})
    assert verdict(s, ex("a", {"anything": 1})).passed is True
    assert verdict(s, ex("a", None, valid=False)).passed is True
    assert verdict(s, ex("a", error=True)).passed is False
    assert verdict(s).passed is False


def test_reliability_one_argument_result_per_tool() -> None:  # R14, D9
    v = verdict(reliability(arguments={"a": [{"q": 1}, {"q": 2}]}), ex("a", {"q": 1}))
    assert kinds(v) == [("arguments", "a", False)]
    assert v.failed_argument_checks == ({"tool": "a", "arguments": [{"q": 1}, {"q": 2}]},)
    both = verdict(reliability(arguments={"a": [{"q": 1}, {"q": 2}]}), ex("a", {"q": 1}), ex("a", {"q": 2}))
    assert both.passed is True


def test_reliability_missing_tool_is_not_checked_again() -> None:  # R14, D10
    v = verdict(reliability(expected_tools=["a"], arguments={"a": {"q": 1}}), ex("a", {"q": 1}, error=True))
    assert kinds(v) == [("expected_tool", "a", False)]
    assert v.failed_argument_checks == ()
    assert v.missing_tools == ("a (requested but refused/errored/paused)",)


def test_reliability_argument_tool_never_called_fails() -> None:  # R14
    v = verdict(reliability(arguments={"b": {}}))
    assert (v.passed, v.failed_argument_checks) == (False, ({"tool": "b", "arguments": [{}]},))


def test_reliability_argument_matching_rules() -> None:  # R14: top-level subset, key present
    s = reliability(arguments={"a": {"k": None}})
    assert verdict(s, ex("a", {"k": None, "extra": 1})).passed is True
    assert verdict(s, ex("a", None)).passed is False  # tool_args None counts as {}
    assert verdict(reliability(arguments={"a": {}}), ex("a", None)).passed is True
    assert verdict(reliability(arguments={"a": {"n": "5"}}), ex("a", {"n": 5})).passed is False
    assert (
        verdict(reliability(arguments={"a": {"f": {"x": 1}}}), ex("a", {"f": {"x": 1, "y": 2}})).passed
        is False
    )
    assert verdict(reliability(arguments={"a": {"ids": [1, 2]}}), ex("a", {"ids": [2, 1]})).passed is False
    assert verdict(reliability(arguments={"a": {"q": 1}}), ex("a", {"q": 1}, valid=False)).passed is False


def test_reliability_uses_json_equality_unlike_agno() -> None:
    """docs/scoring.md: Agno compares with Python's `==` (True == 1); tracescore keeps JSON equality."""
    assert verdict(reliability(arguments={"a": {"n": 1}}), ex("a", {"n": True})).passed is False
    assert verdict(reliability(arguments={"a": {"n": 1}}), ex("a", {"n": 1.0})).passed is True


def test_reliability_missing_entries_repeat_duplicates_and_annotate_attempts() -> None:  # R13
    v = verdict(reliability(expected_tools=["a", "b", "a"]), req("b"))
    assert v.missing_tools == ("a", "b (requested but refused/errored/paused)", "a")
    assert [c.target for c in v.checks] == ["a", "b"]
    assert verdict(reliability(expected_tools=["a", "a"]), ex("a")).passed is True


def test_reliability_errored_expected_tool_is_missing_even_when_retried_passes() -> None:  # R10
    s = reliability(expected_tools=["a"])
    assert verdict(s, ex("a", error=True)).passed is False
    assert verdict(s, ex("a", error=True), ex("a")).passed is True


def test_reliability_nameless_and_history_executions_are_skipped() -> None:  # R8, R6
    s = reliability(expected_tools=["a"])
    assert verdict(s, ex("a"), ex(""), ex("", error=True), ex("z", history=True)).passed is True
    assert verdict(s, ex("a", history=True)).passed is False


def test_reliability_includes_members_at_every_depth() -> None:  # R4
    s = reliability(expected_tools=["a"])
    assert verdict(s, ex("a", path="leader/team/member")).passed is True
    assert verdict(s, ex("a"), ex("z", path="leader/team/member", error=True)).passed is False


def test_reliability_reason() -> None:
    v = verdict(reliability(expected_tools=["a"], arguments={"b": {"q": 1}}), ex("b", {"q": 2}), ex("c"))
    assert v.reason == (
        "expected tool a has no clean execution; arguments of b did not match; "
        "unexpected tool calls not allowed: b, c"
    )
    assert verdict(reliability(expected_tools=[])).reason == "run has no tool executions"


def test_scope_leader_with_only_member_executions_does_not_claim_none_ran() -> None:
    v = verdict(spec(expected_tools=["a"], scope="leader"), ex("a", path="leader/member"))
    assert v.reason == (
        "expected tool a has no clean execution; 1 member execution(s) left out (scope: leader)"
    )


def test_latency_bounds_that_apply_to_nothing_pass_without_a_value() -> None:
    """`passed` = every check satisfied (none failed); `value` = satisfied / checks is undefined."""
    v = verdict(spec(latency={"max_ms": {"search": 100}}), ex("fetch", ms=900))
    assert (v.passed, v.value, v.checks) == (True, None, ())
    assert v.reason == "no check applied: no clean execution of a tool with a latency bound"
    strict = verdict(spec(latency={"max_ms": {"search": 100}}, allow_additional=False), ex("fetch"))
    assert (strict.passed, strict.value, strict.additional_tools) == (False, None, ("fetch",))

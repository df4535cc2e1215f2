"""The check catalogue (issue 6) on hand-built evidence: each check's smallest passing and failing case,
the greedy-matching counterexamples, gates, reconciliation and latency over history.

Argument rules have their own module (tests/scoring/checks/test_argument_rules.py), which reuses these
helpers.
"""

from __future__ import annotations

import json
from itertools import count
from typing import Any

import pytest

from scoring import Evidence, Execution, Request, Run, Spec, Verdict, aggregate, judge
from scoring.evidence.definitions import ToolDefinition, definitions_in
from scoring.report.text import tasks_text

_spans = count(1)
MS = 1_000_000


def run(run_id: str = "run-1", task: str | None = "task-1") -> Run:
    return Run(run_id, "trace-1", task, "shop-agent", "leader", None, 1, {})


def ex(
    tool: str,
    arguments: Any = None,
    *,
    error: bool = False,
    paused: bool = False,
    history: bool = False,
    valid: bool = True,
    at: tuple[float, float] = (0, 10),
    path: str | None = "leader",
    call_id: str | None = None,
    call_id_source: str | None = None,
) -> Execution:
    """An execution; `at` is (start, end) in milliseconds."""
    return Execution(
        span_id=f"span-{next(_spans)}",
        tool_name=tool,
        arguments=arguments,
        arguments_valid=valid,
        error=error,
        paused=paused,
        from_history=history,
        duration_ms=at[1] - at[0],
        agent_path=path,
        call_id=call_id,
        start_ns=int(at[0] * MS),
        end_ns=int(at[1] * MS),
        call_id_source=call_id_source,
    )


def req(
    tool: str,
    *,
    answered_by: Execution | None = None,
    round: int = 1,
    call_id: str | None = None,
    chat: str = "chat-1",
    position: int = 0,
    encoding: str = "gen_ai",
    path: str | None = "leader",
) -> Request:
    return Request(
        tool_name=tool,
        call_id=call_id,
        executed=answered_by is not None,
        agent_path=path,
        span_id=chat,
        position=position,
        round=round,
        execution_span_id=answered_by.span_id if answered_by else None,
        encoding=encoding,
    )


def evidence(*items: Execution | Request, definitions: Any = None, run_: Run | None = None) -> Evidence:
    executions = tuple(i for i in items if isinstance(i, Execution))
    requests = tuple(i for i in items if isinstance(i, Request))
    if definitions is None:
        return Evidence(run_ or run(), executions, requests)
    return Evidence(run_ or run(), executions, requests, definitions)


def spec(**fields: Any) -> Spec:
    return Spec.model_validate({"name": "s", **fields})


def verdict(spec_: Spec, *items: Execution | Request, definitions: Any = None) -> Verdict:
    return judge(spec_, evidence(*items, definitions=definitions))


def kinds(v: Verdict) -> list[tuple[str, str, bool]]:
    return [(c.kind, c.target, c.satisfied) for c in v.checks]


# === schema ==========================================================================================

ORDER = {
    "type": "object",
    "required": ["sku", "items"],
    "additionalProperties": False,
    "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
        "priority": {"enum": ["low", "high"]},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}},
        },
    },
}
GOOD = {"sku": "ABC-1", "items": [{"qty": 2}]}


def test_schema_valid_calls_pass() -> None:
    v = verdict(spec(schema={"order": ORDER}), ex("order", GOOD), ex("order", {**GOOD, "priority": "low"}))
    assert kinds(v) == [("schema", "order", True)]
    assert v.checks[0].detail == "2 clean order call(s) valid against its schema"
    assert (v.passed, v.value) == (True, 1.0)


@pytest.mark.parametrize(
    ("arguments", "pointer", "rule"),
    [
        ({"sku": 5, "items": []}, "/sku", "type"),
        ({"sku": "abc", "items": []}, "/sku", "pattern"),
        ({"items": []}, "", "required"),
        ({**GOOD, "priority": "urgent"}, "/priority", "enum"),
        ({**GOOD, "extra": 1}, "", "additionalProperties"),
        ({"sku": "ABC-1", "items": [{"qty": 1}, {"qty": 0}]}, "/items/1/qty", "minimum"),
        ({"sku": "ABC-1", "items": {"qty": 1}}, "/items", "type"),
    ],
)
def test_schema_names_the_call_the_pointer_and_the_rule(
    arguments: dict[str, Any], pointer: str, rule: str
) -> None:
    bad = ex("order", arguments)
    v = verdict(spec(schema={"order": ORDER}), bad)
    assert kinds(v) == [("schema", "order", False)]
    [failure] = v.checks[0].observed
    assert (failure["span_id"], failure["pointer"], failure["rule"]) == (bad.span_id, pointer, rule)
    assert f"call {bad.span_id} at {pointer or '/'} breaks {rule}:" in v.checks[0].detail
    assert v.checks[0].expected == ORDER


def test_schema_every_clean_call_must_validate() -> None:
    v = verdict(spec(schema={"order": ORDER}), ex("order", GOOD), ex("order", {"sku": 1, "items": []}))
    assert kinds(v) == [("schema", "order", False)]
    assert v.checks[0].detail.startswith("1 of 2 clean order call(s) break its schema")


def test_schema_ignores_unclean_calls() -> None:
    v = verdict(spec(schema={"order": ORDER}), ex("order", GOOD), ex("order", {"sku": 1}, error=True))
    assert kinds(v) == [("schema", "order", True)]


def test_schema_non_json_and_uncaptured_arguments_fail_without_crashing() -> None:
    v = verdict(spec(schema={"order": ORDER}), ex("order", None, valid=False), ex("order", None))
    assert kinds(v) == [("schema", "order", False)]
    assert [f["rule"] for f in v.checks[0].observed] == ["json", "captured"]
    assert v.label == "fail"


def test_schema_one_check_per_tool_that_ran() -> None:
    s = spec(schema={"order": ORDER, "refund": {"type": "object"}, "never": {"type": "object"}})
    v = verdict(s, ex("order", GOOD), ex("refund", [1]))
    assert kinds(v) == [("schema", "order", True), ("schema", "refund", False)]


def test_schema_for_a_tool_that_did_not_run_checks_nothing() -> None:
    v = verdict(spec(schema={"order": ORDER}), ex("other", {}))
    assert (v.checks, v.passed, v.value) == ((), True, None)
    assert v.reason == "no check applied: no clean execution of a tool with a schema"


def test_schema_refs_are_resolved_inside_the_schema_never_fetched() -> None:
    local = {
        "$defs": {"qty": {"type": "integer"}},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/qty"}},
    }
    assert verdict(spec(schema={"t": local}), ex("t", {"n": 1})).passed is True
    assert verdict(spec(schema={"t": local}), ex("t", {"n": "1"})).passed is False
    remote = {"$ref": "https://example.invalid/schema.json"}
    v = verdict(spec(schema={"t": remote}), ex("t", {"n": 1}))
    assert kinds(v) == [("schema", "t", False)]
    assert v.checks[0].observed[0]["rule"] == "$ref"


def _defs(**schemas: Any) -> Any:
    return lambda: {
        tool: ToolDefinition(tool, schema, "chat-span", "gen_ai.tool.definitions")
        for tool, schema in schemas.items()
    }


def test_schema_from_trace_validates_against_captured_definitions() -> None:
    s = spec(schema="from_trace")
    ok = verdict(s, ex("order", GOOD), definitions=_defs(order=ORDER))
    assert kinds(ok) == [("schema", "order", True)]
    assert ok.checks[0].expected["from_trace"] == {
        "span_id": "chat-span",
        "attribute": "gen_ai.tool.definitions",
    }
    bad = verdict(s, ex("order", {"items": []}), definitions=_defs(order=ORDER))
    assert kinds(bad) == [("schema", "order", False)]


def test_schema_from_trace_fails_a_tool_with_no_captured_definition() -> None:
    v = verdict(
        spec(schema="from_trace"), ex("order", GOOD), ex("lookup", {}), definitions=_defs(order=ORDER)
    )
    assert kinds(v) == [("schema", "order", True), ("schema", "lookup", False)]
    assert v.checks[1].detail == (
        "no definition of lookup captured in the run's traces "
        "(gen_ai.tool.definitions or llm.tools.*.tool.json_schema)"
    )


def test_schema_from_trace_fails_an_invalid_captured_definition() -> None:
    v = verdict(spec(schema="from_trace"), ex("order", GOOD), definitions=_defs(order={"type": "objekt"}))
    assert kinds(v) == [("schema", "order", False)]
    assert "is not a valid JSON Schema (Draft 2020-12)" in v.checks[0].detail


def test_schema_patterns_run_on_re2_with_json_schema_semantics() -> None:
    # `pattern` is unanchored (JSON Schema), patternProperties exempt keys from additionalProperties.
    keyed = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "[0-9]{3}"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": False,
    }
    s = spec(schema={"t": keyed})
    assert verdict(s, ex("t", {"code": "ab123cd", "x-trace": "1"})).passed is True
    v = verdict(s, ex("t", {"code": "12", "x-trace": 2, "other": 1}))
    assert sorted((f["pointer"], f["rule"]) for f in v.checks[0].observed) == [
        ("", "additionalProperties"),
        ("/code", "pattern"),
        ("/x-trace", "type"),
    ]
    messages = {f["rule"]: f["message"] for f in v.checks[0].observed}
    assert messages["pattern"] == "'12' does not match '[0-9]{3}'"
    assert messages["additionalProperties"] == "'other' does not match any of the regexes: '^x-'"


def test_schema_from_trace_with_a_pattern_re2_cannot_run_fails_naming_it() -> None:
    # The definition comes from the traffic: a lookahead cannot be refused at load time, so the check
    # fails, naming the tool, the span that carried the definition, the pattern and why.
    captured = {"type": "object", "properties": {"p": {"type": "string", "pattern": "^(?=.*[0-9]).+$"}}}
    v = verdict(spec(schema="from_trace"), ex("login", {"p": "a1"}), definitions=_defs(login=captured))
    assert kinds(v) == [("schema", "login", False)]
    assert v.checks[0].detail == (
        "the definition of login captured on span chat-span is a regex RE2 cannot run at "
        "/properties/p/pattern ('^(?=.*[0-9]).+$'): lookahead (?=…) is not supported: match the text "
        "itself, or use a second rule"
    )
    assert v.label == "fail"


def test_schema_a_pattern_reached_only_through_a_ref_into_data_still_runs_on_re2() -> None:
    # `enum` values are data, not checked at load; a $ref may still make one a schema. RE2 then refuses
    # the pattern at match time: a failed check, never a backtracking match.
    sneaky = {"enum": [{"pattern": "(?=a)a"}], "$ref": "#/properties/q/enum/0"}
    v = verdict(spec(schema={"t": {"properties": {"q": sneaky}}}), ex("t", {"q": "a"}))
    (failure,) = [f for f in v.checks[0].observed if f["rule"] == "pattern"]
    assert failure["message"].startswith("regex '(?=a)a' cannot be matched in linear time (RE2): lookahead")


def test_definitions_are_read_only_when_a_spec_asks() -> None:
    def never() -> Any:
        raise AssertionError("definitions read for a spec that does not use schema: from_trace")

    assert verdict(
        spec(schema={"order": ORDER}, expected_tools=["order"]), ex("order", GOOD), definitions=never
    ).passed


@pytest.mark.parametrize(
    "attributes",
    [
        {"gen_ai.tool.definitions": '[{"type": "function", "name": "t", "parameters": {"type": "object"}}]'},
        {
            "gen_ai.tool.definitions": [
                {"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}
            ]
        },
        {"gen_ai.tool.definitions": '[{"name": "t", "input_schema": {"type": "object"}}]'},
        {"gen_ai.tool.definitions": '[{"name": "t", "inputSchema": {"type": "object"}}]'},
        {"gen_ai.tool.definitions": '[{"name": "t", "parameters": "{\\"type\\": \\"object\\"}"}]'},
        {
            "llm.tools.0.tool.json_schema": json.dumps(
                {"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}
            )
        },
    ],
    ids=["semconv", "openai", "anthropic", "mcp", "parameters-as-text", "openinference"],
)
def test_tool_definitions_in_every_captured_shape(attributes: dict[str, Any]) -> None:
    assert [(tool, schema) for tool, schema, _ in definitions_in(attributes)] == [("t", {"type": "object"})]


def test_tool_definitions_ignore_what_is_not_a_definition() -> None:
    assert (
        definitions_in({"gen_ai.tool.definitions": "not json", "llm.tools.0.tool.json_schema": "[1]"}) == []
    )
    assert definitions_in({"gen_ai.tool.definitions": '[{"name": "t"}, {"parameters": {}}]'}) == []


# === calls ===========================================================================================


@pytest.mark.parametrize(
    ("count_", "runs", "ok", "wanted"),
    [
        ({"min": 1, "max": 2}, 1, True, "between 1 and 2"),
        ({"min": 1, "max": 2}, 3, False, "between 1 and 2"),
        ({"min": 1, "max": 2}, 0, False, "between 1 and 2"),
        ({"min": 2}, 5, True, "at least 2"),
        ({"max": 1}, 2, False, "at most 1"),
        ({"exactly": 2}, 2, True, "exactly 2"),
        ({"exactly": 0}, 0, True, "exactly 0"),
        ({"exactly": 0}, 1, False, "exactly 0"),
    ],
)
def test_calls_counts_clean_executions(count_: dict[str, int], runs: int, ok: bool, wanted: str) -> None:
    v = verdict(spec(calls={"search": count_}), *(ex("search") for _ in range(runs)))
    assert kinds(v) == [("calls", "search", ok)]
    assert v.checks[0].detail == f"search ran cleanly {runs} time(s); expected {wanted}"
    assert v.checks[0].observed == runs


def test_calls_ignore_unclean_attempts_but_explain_them() -> None:
    v = verdict(spec(calls={"search": {"min": 1}}), ex("search", error=True), req("search"))
    assert kinds(v) == [("calls", "search", False)]
    assert v.checks[0].detail == (
        "search ran cleanly 0 time(s); expected at least 1 (errored; requested but never executed)"
    )


def test_calls_one_check_per_tool() -> None:
    v = verdict(spec(calls={"a": {"exactly": 1}, "b": {"max": 0}}), ex("a"), ex("b"))
    assert kinds(v) == [("calls", "a", True), ("calls", "b", False)]
    assert v.value == 0.5


def test_a_tool_capped_at_zero_is_not_expected_in_strict_mode() -> None:
    v = verdict(spec(calls={"a": {"min": 1}, "b": {"exactly": 0}}, allow_additional=False), ex("a"), ex("b"))
    assert v.additional_tools == ("b",)


# === forbidden_tools (a gate) ========================================================================


def test_forbidden_tool_fails_the_run_without_counting() -> None:
    v = verdict(
        spec(expected_tools=["search"], forbidden_tools=["delete_all"]), ex("search"), ex("delete_all")
    )
    assert (v.passed, v.value, v.label) == (False, 1.0, "fail")
    assert kinds(v) == [("expected_tool", "search", True)]
    [gate] = v.gates
    assert (gate.kind, gate.satisfied, gate.detail, gate.observed) == (
        "forbidden_tools",
        False,
        "forbidden tools ran: delete_all",
        ["delete_all"],
    )
    assert v.reason == "forbidden tools ran: delete_all"


def test_no_forbidden_tool_passes() -> None:
    v = verdict(spec(forbidden_tools=["delete_all"]), ex("search"))
    assert (v.passed, v.value, v.checks) == (True, None, ())  # a spec of gates only is valid
    assert v.gates[0].detail == "no forbidden tool ran"
    assert v.reason is None


@pytest.mark.parametrize(
    "attempt",
    [ex("drop", error=True), ex("drop", paused=True), req("drop")],
    ids=["errored", "paused", "refused"],
)
def test_forbidden_attempts_count_with_strict_counts_attempts(attempt: Execution | Request) -> None:
    assert verdict(spec(forbidden_tools=["drop"]), attempt).passed is True
    v = verdict(spec(forbidden_tools=["drop"], strict_counts="attempts"), attempt)
    assert v.passed is False
    assert v.gates[0].detail == "forbidden tools attempted: drop"


def test_forbidden_history_is_never_this_runs_attempt() -> None:
    v = verdict(spec(forbidden_tools=["drop"], strict_counts="attempts"), ex("drop", history=True))
    assert v.passed is True


def test_strict_and_forbidden_gates_both_report() -> None:
    s = spec(expected_tools=["a"], allow_additional=False, forbidden_tools=["z"])
    v = verdict(s, ex("a"), ex("z"))
    assert [(g.kind, g.satisfied) for g in v.gates] == [("strict", False), ("forbidden_tools", False)]
    assert v.reason == "unexpected tools not allowed: z; forbidden tools ran: z"


# === trajectory ======================================================================================


def traj(mode: str, *tools: Any) -> Spec:
    return spec(trajectory={"mode": mode, "tools": list(tools)})


def x(value: Any, *more: Any) -> dict[str, Any]:
    return {"x": {"any_of": [value, *more]}}


@pytest.mark.parametrize(
    ("mode", "names", "ok"),
    [
        ("strict", ["a", "b"], True),
        ("strict", ["b", "a"], False),  # order matters
        ("strict", ["a", "b", "b"], False),  # so does length
        ("unordered", ["b", "a"], True),
        ("unordered", ["a", "b", "c"], False),  # an extra call
        ("unordered", ["a"], False),  # a missing call
        ("subset", ["a"], True),  # every call is in the reference
        ("subset", [], True),
        ("subset", ["a", "a"], False),  # repetitions beyond the reference are not
        ("subset", ["a", "c"], False),
        ("superset", ["c", "b", "a"], True),  # every reference call appears; extras fine
        ("superset", ["a", "c"], False),
    ],
)
def test_trajectory_modes(mode: str, names: list[str], ok: bool) -> None:
    calls = [ex(name, at=(i, i + 1)) for i, name in enumerate(names)]
    v = verdict(traj(mode, "a", "b"), *calls)
    assert kinds(v) == [("trajectory", mode, ok)]
    assert v.checks[0].observed["calls"] == names


def test_trajectory_uses_clean_executions_in_start_order() -> None:
    calls = [ex("b", at=(5, 6)), ex("a", at=(1, 2)), ex("c", at=(3, 4), error=True)]
    v = verdict(traj("strict", "a", "b"), *calls)
    assert kinds(v) == [("trajectory", "strict", True)]


def test_trajectory_strict_names_the_first_mismatch() -> None:
    v = verdict(
        traj("strict", "a", {"tool": "b", "values": x(1)}), ex("a", at=(0, 1)), ex("b", {"x": 2}, at=(2, 3))
    )
    assert v.checks[0].detail.startswith(
        'trajectory (strict): position 2: expected b {"x": {"any_of": [1]}}, got b'
    )


def test_trajectory_items_apply_argument_rules() -> None:
    s = traj("unordered", {"tool": "search", "values": {"q": {"any_of": ["Parcels"], "normalize": True}}})
    assert verdict(s, ex("search", {"q": "parcels", "limit": 5})).passed is True
    assert verdict(s, ex("search", {"q": "boxes"})).passed is False


# The greedy counterexamples (../shared/reference/matching-rules-bfcl-agentevals.md): each passes here
# because pairs are assigned by maximum matching, not first fit.


@pytest.mark.parametrize("mode", ["unordered", "superset"])
def test_bfcl_m_overlapping_acceptable_values(mode: str) -> None:
    """§1.6 ✔ M: reference [f(x∈{1,2}), f(x∈{1})], calls [f(1), f(2)]: BFCL's first fit fails."""
    s = traj(mode, {"tool": "f", "values": x(1, 2)}, {"tool": "f", "values": x(1)})
    v = verdict(s, ex("f", {"x": 1}, at=(0, 1)), ex("f", {"x": 2}, at=(0, 1)))
    assert kinds(v) == [("trajectory", mode, True)]
    swapped = verdict(s, ex("f", {"x": 2}, at=(0, 1)), ex("f", {"x": 1}, at=(0, 1)))  # ✔ N
    assert swapped.passed is True


def test_agentevals_f_superset_with_overlapping_arguments() -> None:
    """§2.9 ✔ F: calls [A(x=1,y=2), A(x=1)] against reference [A(x=1), A(x=1,y=2)] (calls ⊇ reference
    arguments): agentevals gives A(x=1,y=2) to the first reference call and returns False."""
    s = traj(
        "superset",
        {"tool": "A", "values": x(1)},
        {"tool": "A", "values": {**x(1), "y": {"any_of": [2]}}},
    )
    v = verdict(s, ex("A", {"x": 1, "y": 2}, at=(0, 1)), ex("A", {"x": 1}, at=(1, 2)))
    assert kinds(v) == [("trajectory", "superset", True)]


def test_subset_counterexample() -> None:
    """agentevals' subset walks the calls and takes the first reference call that fits: A(1) takes
    A(x∈{1,2}) and A(2) is left with A(x∈{1})."""
    s = traj("subset", {"tool": "A", "values": x(1, 2)}, {"tool": "A", "values": x(1)})
    v = verdict(s, ex("A", {"x": 1}, at=(0, 1)), ex("A", {"x": 2}, at=(1, 2)))
    assert kinds(v) == [("trajectory", "subset", True)]


def test_trajectory_reports_what_was_not_matched() -> None:
    v = verdict(traj("unordered", "a", {"tool": "b", "values": x(1)}), ex("a"), ex("c"))
    observed = v.checks[0].observed
    assert observed["unmatched_expected"] == ['b {"x": {"any_of": [1]}}']
    assert [c.split(" ")[0] for c in observed["unmatched_calls"]] == ["c"]
    assert v.checks[0].detail.startswith(
        "trajectory (unordered): expected call(s) with no matching clean execution: "
        'b {"x": {"any_of": [1]}}; '
        "clean call(s) not in the reference: c (call "
    )


# === before ==========================================================================================


def test_before_some_a_ends_before_some_b_starts() -> None:
    v = verdict(spec(before=[["lookup", "quote"]]), ex("lookup", at=(0, 10)), ex("quote", at=(10, 20)))
    assert kinds(v) == [("before", "lookup < quote", True)]  # touching counts: it ended as B started


def test_before_fails_when_b_starts_first() -> None:
    v = verdict(spec(before=[["lookup", "quote"]]), ex("lookup", at=(5, 15)), ex("quote", at=(0, 10)))
    assert kinds(v) == [("before", "lookup < quote", False)]
    assert v.checks[0].detail == "no clean lookup ended before a clean quote started"


def test_before_any_pair_suffices() -> None:
    calls = [ex("a", at=(50, 60)), ex("b", at=(0, 5)), ex("a", at=(0, 1)), ex("b", at=(70, 80))]
    assert verdict(spec(before=[["a", "b"], ["b", "a"]]), *calls).value == 1.0


def test_before_missing_or_unclean_side_fails() -> None:
    v = verdict(spec(before=[["a", "b"]]), ex("a", at=(0, 1)), ex("b", at=(5, 6), error=True))
    assert kinds(v) == [("before", "a < b", False)]
    assert v.checks[0].detail == "a before b: no clean execution of b"


def test_before_same_tool_needs_two_calls() -> None:
    assert verdict(spec(before=[["a", "a"]]), ex("a", at=(0, 1))).passed is False
    assert verdict(spec(before=[["a", "a"]]), ex("a", at=(0, 1)), ex("a", at=(2, 3))).passed is True


# === parallel ========================================================================================


def test_parallel_rounds_from_requests() -> None:
    a, b = ex("a", at=(0, 10)), ex("b", at=(20, 30))  # sequential in time, but asked for together
    v = verdict(spec(parallel={"tools": ["a", "b"]}), a, b, req("a", answered_by=a), req("b", answered_by=b))
    assert kinds(v) == [("parallel", "a,b", True)]
    assert v.checks[0].observed == {"source": "requests", "rounds": [["a", "b"]], "missing": []}
    assert v.checks[0].detail == (
        "parallel: a, b ran in 1 round(s), at most 1 allowed; rounds from the chat spans that requested them"
    )


def test_parallel_two_request_rounds_fail_one_allowed() -> None:
    a, b = ex("a", at=(0, 10)), ex("b", at=(0, 10))  # overlapping in time, but asked for in two turns
    items = (a, b, req("a", answered_by=a, round=1), req("b", answered_by=b, round=2, chat="chat-2"))
    assert verdict(spec(parallel={"tools": ["a", "b"], "max_rounds": 1}), *items).passed is False
    assert verdict(spec(parallel={"tools": ["a", "b"], "max_rounds": 2}), *items).passed is True


def test_parallel_rounds_from_overlapping_intervals_without_requests() -> None:
    s = spec(parallel={"tools": ["a", "b"]})
    v = verdict(s, ex("a", at=(0, 10)), ex("b", at=(5, 20)))
    assert kinds(v) == [("parallel", "a,b", True)]
    assert v.checks[0].observed["source"] == "intervals"
    assert v.checks[0].detail.endswith("rounds from overlapping execution intervals")
    sequential = verdict(s, ex("a", at=(0, 10)), ex("b", at=(10, 20)))  # touching is not overlapping
    assert sequential.passed is False
    assert sequential.checks[0].observed["rounds"] == [["a"], ["b"]]


def test_parallel_falls_back_to_intervals_when_a_call_answered_no_request() -> None:
    a, b = ex("a", at=(0, 10)), ex("b", at=(5, 10))
    v = verdict(spec(parallel={"tools": ["a", "b"]}), a, b, req("a", answered_by=a))
    assert v.checks[0].observed["source"] == "intervals"
    assert v.checks[0].detail.endswith("(1 of 2 call(s) answered no captured request)")


def test_parallel_needs_every_listed_tool() -> None:
    v = verdict(spec(parallel={"tools": ["a", "b"]}), ex("a"), ex("b", error=True))
    assert kinds(v) == [("parallel", "a,b", False)]
    assert v.checks[0].detail.startswith("parallel: no clean execution of b")


# === expect_no_tool_calls / expect_tool_call =========================================================


def test_expect_no_tool_calls() -> None:
    s = spec(expect_no_tool_calls=True)  # a spec with only this check is valid
    quiet = verdict(s)
    assert (kinds(quiet), quiet.passed, quiet.value) == ([("expect_no_tool_calls", "*", True)], True, 1.0)
    v = verdict(s, ex("search"), ex("fetch"))
    assert (kinds(v), v.value) == ([("expect_no_tool_calls", "*", False)], 0.0)
    assert v.checks[0].detail == "expected no tool call, but 2 clean execution(s) ran: fetch, search"


def test_expect_no_tool_calls_only_clean_executions_count() -> None:
    v = verdict(spec(expect_no_tool_calls=True), ex("search", error=True), req("refund"))
    assert v.passed is True
    assert v.checks[0].detail == "no tool ran cleanly; attempted without a clean execution: refund, search"


def test_expect_tool_call() -> None:
    s = spec(expect_tool_call=True)
    assert kinds(verdict(s, ex("anything", {"x": 1}))) == [("expect_tool_call", "*", True)]
    v = verdict(s, ex("search", paused=True))
    assert kinds(v) == [("expect_tool_call", "*", False)]
    assert (
        v.checks[0].detail
        == "expected a tool call, but no tool ran cleanly; attempted without a clean execution: search"
    )


# === require_executions_for_requests =================================================================


def test_require_executions_for_requests() -> None:
    s = spec(require_executions_for_requests=True)
    done = ex("search", call_id="c1")
    ok = verdict(s, done, req("search", answered_by=done, call_id="c1"))
    assert (kinds(ok), ok.checks[0].detail) == (
        [("require_executions_for_requests", "requests", True)],
        "each of 1 requested tool call(s) has an execution",
    )
    v = verdict(s, done, req("search", answered_by=done), req("refund", call_id="c9", position=1))
    assert kinds(v) == [("require_executions_for_requests", "requests", False)]
    assert v.checks[0].detail == "1 requested tool call(s) never executed: refund (c9)"
    assert v.checks[0].observed == [
        {
            "tool": "refund",
            "call_id": "c9",
            "span_id": "chat-1",
            "position": 1,
            "round": 1,
            "encoding": "gen_ai",
        }
    ]


def test_an_errored_or_paused_execution_answers_its_request() -> None:
    failed = ex("search", error=True)
    assert verdict(
        spec(require_executions_for_requests=True), failed, req("search", answered_by=failed)
    ).passed


# === reconciliation in every verdict =================================================================


def test_every_verdict_reconciles_requests_and_executions() -> None:
    clean = ex("search", call_id="c1", call_id_source="span")
    recovered = ex("quote", call_id="c2", call_id_source="request")
    errored = ex("charge", error=True)
    paused = ex("refund", paused=True)
    history = ex("search", history=True)
    items = (
        clean,
        recovered,
        errored,
        paused,
        history,
        req("search", answered_by=clean, call_id="c1"),
        req("quote", answered_by=recovered, call_id="c2", position=1),
        req("cancel", call_id="c3", position=2, encoding="text_json"),
    )
    for s in (spec(expected_tools=["search"]), spec(expected_tools=["search"], profile="reliability_eval")):
        detail = verdict(s, *items).detail["reconciliation"]
        assert detail["counts"] == {
            "clean": 2,
            "errored": 1,
            "paused": 1,
            "requested_never_executed": 1,
            "executed_without_request": 2,
            "from_history": 1,
        }
        assert detail["requests_captured"] is True
        calls = {(c["tool"], c["state"]): c for c in detail["calls"]}
        assert calls[("search", "clean")]["matched_by"] == "call_id"
        assert calls[("quote", "clean")]["matched_by"] == "name_arguments_order"
        assert calls[("charge", "errored")]["request"] is None
        assert calls[("cancel", "requested_never_executed")]["request"] == {
            "span_id": "chat-1",
            "position": 2,
            "round": 1,
            "encoding": "text_json",
        }


def test_reconciliation_follows_scope() -> None:
    items = (ex("a"), ex("b", path="leader/member"))
    detail = verdict(spec(expected_tools=["a"], scope="leader"), *items).detail["reconciliation"]
    assert [c["tool"] for c in detail["calls"]] == ["a"]
    assert detail["requests_captured"] is False


# === strict mode knows the catalogue's tools =========================================================


def test_tools_named_by_catalogue_checks_are_expected_in_strict_mode() -> None:
    s = spec(
        argument_rules={"a": {"values": {}}},
        calls={"b": {"min": 1}},
        schema={"c": {"type": "object"}},
        trajectory={"mode": "superset", "tools": ["d"]},
        before=[["e", "f"]],
        parallel={"tools": ["g"]},
        allow_additional=False,
    )
    v = verdict(s, *(ex(name, {}) for name in "abcdefgz"))
    assert v.additional_tools == ("z",)


# === latency over history ============================================================================


def _task_verdicts(s: Spec, durations: list[list[float]], start_s: float = 0) -> list[Verdict]:
    return [
        judge(
            s,
            evidence(
                *(ex("search", at=(start_s * 1000, start_s * 1000 + d)) for d in run_durations),
                run_=run(f"r{i}"),
            ),
        )
        for i, run_durations in enumerate(durations)
    ]


def test_percentile_bounds_are_not_per_run_checks() -> None:
    s = spec(latency={"p95_ms": {"search": 100}})
    v = verdict(s, ex("search", at=(0, 500)))
    assert (v.checks, v.passed, v.value) == ((), True, None)
    assert v.reason == "latency percentiles are judged per task over its runs (tracescore report)"
    history = v.detail["latency_history"]
    assert history["bounds"] == {"p95_ms": {"search": 100}}
    assert [(s_["tool"], s_["duration_ms"]) for s_ in history["samples"]] == [("search", 500)]


def test_task_aggregate_computes_nearest_rank_percentiles() -> None:
    s = spec(latency={"p50_ms": {"search": 25}, "p95_ms": {"search": 35}})
    verdicts = _task_verdicts(s, [[10, 20], [30], [40]])
    [result] = aggregate(verdicts)
    assert [
        (e["percentile"], e["observed_ms"], e["bound_ms"], e["n"], e["satisfied"]) for e in result.latency
    ] == [
        ("p50", 20, 25, 4, True),  # sorted [10, 20, 30, 40]: rank ceil(0.5·4) = 2
        ("p95", 40, 35, 4, False),  # rank ceil(0.95·4) = 4
    ]
    assert result.latency_passed is False
    text = tasks_text([result])
    assert "latency over each task's runs (nearest-rank percentiles):" in text
    assert "2 latency bound(s); 1 exceeded" in text


def test_latency_star_bounds_each_other_tool_separately() -> None:
    s = spec(latency={"p99_ms": {"search": 1000, "*": 50}})
    v = judge(s, evidence(ex("search", at=(0, 500)), ex("fetch", at=(0, 60)), ex("get", at=(0, 40))))
    [result] = aggregate([v])
    assert [(e["tool"], e["bound_ms"], e["satisfied"]) for e in result.latency] == [
        ("fetch", 50, False),
        ("get", 50, True),
        ("search", 1000, True),
    ]


def test_latency_windows_group_by_execution_start() -> None:
    s = spec(latency={"p95_ms": {"search": 100}, "window": "1h"})
    early = _task_verdicts(s, [[50], [60]], start_s=10)
    late = _task_verdicts(s, [[500]], start_s=3600 + 10)
    [result] = aggregate([*early, *late])
    assert [
        (e["window_start"], e["window_end"], e["observed_ms"], e["satisfied"]) for e in result.latency
    ] == [
        ("1970-01-01T00:00:00Z", "1970-01-01T01:00:00Z", 60, True),
        ("1970-01-01T01:00:00Z", "1970-01-01T02:00:00Z", 500, False),
    ]


def test_no_percentile_bounds_means_no_latency_in_the_aggregate() -> None:
    [result] = aggregate(_task_verdicts(spec(expected_tools=["search"]), [[10]]))
    assert (result.latency, result.latency_passed) == ([], None)


def test_max_ms_and_percentiles_together() -> None:
    s = spec(latency={"max_ms": {"search": 100}, "p50_ms": {"search": 100}})
    v = verdict(s, ex("search", at=(0, 150)))
    assert kinds(v) == [("latency", "search", False)]
    assert "latency_history" in v.detail

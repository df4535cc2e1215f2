"""The multi-turn checks of issue 21 on hand-built evidence: `results` and `result_shape`, `flows`,
`idempotent_writes` and `state`, each with its smallest passing and failing case."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import count
from typing import Any

import pytest

from scoring import Evidence, Execution, Spec, Verdict, judge
from scoring.evidence.state import StateSnapshot
from tests.scoring.checks.test_checks_catalogue import run

_spans = count(1)
MS = 1_000_000


def ex(
    tool: str,
    arguments: Any = None,
    result: str | None = None,
    *,
    at: tuple[float, float] = (0, 10),
    error: bool = False,
) -> Execution:
    return Execution(
        span_id=f"s{next(_spans)}",
        tool_name=tool,
        arguments=arguments,
        arguments_valid=True,
        error=error,
        paused=False,
        from_history=False,
        duration_ms=at[1] - at[0],
        agent_path="leader",
        call_id=None,
        start_ns=int(at[0] * MS),
        end_ns=int(at[1] * MS),
        result_text=result,
    )


def verdict(
    fields: dict[str, Any], *executions: Execution, state: Any = ..., earlier: tuple[Execution, ...] = ()
) -> Verdict:
    spec = Spec.model_validate({"name": "s", **fields})
    snapshot = None if state is ... else StateSnapshot(state, True, "state-span", 1)
    evidence = Evidence(run(), tuple(executions), (), state=lambda: snapshot, earlier=earlier)
    return judge(spec, evidence)


def kinds(v: Any, kind: str) -> list[Any]:
    return [c for c in v.checks if c.kind == kind]


# results -------------------------------------------------------------------------------------------


def test_result_values_use_the_argument_rule_language() -> None:
    zip_call = ex("get_zipcode", {"city": "Paris"}, json.dumps({"zip": "75001", "items": [{"id": 7}]}))
    spec = {
        "results": {
            "get_zipcode": {"values": {"zip": {"regex": "[0-9]{5}"}, "items.0.id": {"range": [1, 9]}}}
        }
    }
    assert verdict(spec, zip_call).passed
    bad = ex("get_zipcode", {"city": "Paris"}, json.dumps({"zip": "7500A", "items": [{"id": 70}]}))
    v = verdict(spec, bad)
    assert not v.passed
    [check] = kinds(v, "results")
    assert (
        'zip: "7500A" does not match regex' in check.detail
        and "items.0.id: 70 is outside range" in check.detail
    )


def test_a_text_result_is_a_string_for_value_rules_and_has_no_paths() -> None:
    text = ex("weather", {"zip": "75001"}, "Sunny, 21 C")
    assert verdict({"results": {"weather": {"value": {"regex": "Sunny.*"}}}}, text).passed
    v = verdict({"results": {"weather": {"values": {"temp": {"range": [0, 40]}}}}}, text)
    assert not v.passed and "the result is text, not a JSON object or array" in v.reason


def test_empty_rule_asks_only_for_a_captured_result_of_a_clean_call() -> None:
    assert verdict({"results": {"t": {}}}, ex("t", {}, "42")).passed
    v = verdict({"results": {"t": {}}}, ex("t", {}, None))
    assert not v.passed and "not captured" in v.reason
    errored = ex("t", {}, "42", error=True)
    assert "no clean t execution" in verdict({"results": {"t": {}}}, errored).reason


def test_result_schema_is_json_schema() -> None:
    spec = {"results": {"t": {"schema": {"type": "object", "required": ["id"]}}}}
    assert verdict(spec, ex("t", {}, '{"id": 1}')).passed
    v = verdict(spec, ex("t", {}, '{"name": 1}'))
    assert not v.passed and "required" in v.reason


def test_shape_is_its_own_weaker_check() -> None:
    spec = {"results": {"ls": {"shape": {"files": ["a", "b"], "count": 2}}}}
    wrong_values = ex("ls", {}, json.dumps({"files": ["x", "y"], "count": 9}))
    v = verdict(spec, wrong_values)
    assert v.passed and [c.kind for c in v.checks] == ["results", "result_shape"]
    assert "not values" in kinds(v, "result_shape")[0].detail
    short = verdict(spec, ex("ls", {}, json.dumps({"files": ["x"], "count": 1})))
    assert not short.passed and "/files has 1 item(s), the example 2" in short.reason
    keys = verdict(spec, ex("ls", {}, json.dumps({"files": ["x", "y"], "total": 2})))
    assert "keys differ: missing count; extra total" in keys.reason


# flows ---------------------------------------------------------------------------------------------

FLOW = {"flows": [{"from": "create_folder.result.folder_id", "to": "save_report.arguments.folder_id"}]}


def test_flow_holds_when_the_call_reuses_an_earlier_result() -> None:
    created = ex("create_folder", {"name": "r"}, '{"folder_id": "f17"}', at=(0, 10))
    saved = ex("save_report", {"folder_id": "f17"}, "ok", at=(20, 30))
    assert verdict(FLOW, created, saved).passed


def test_a_guessed_value_breaks_the_flow_naming_flow_and_call() -> None:
    created = ex("create_folder", {"name": "r"}, '{"folder_id": "f17"}', at=(0, 10))
    saved = ex("save_report", {"folder_id": "f18"}, "ok", at=(20, 30))
    v = verdict(FLOW, created, saved)
    assert not v.passed
    assert (
        f"flow create_folder.result.folder_id -> save_report.arguments.folder_id broken: save_report call "
        f'{saved.span_id} passed "f18", not a returned value (earlier create_folder results gave ["f17"])'
    ) in v.reason


def test_the_value_must_be_returned_before_the_call_starts() -> None:
    saved = ex("save_report", {"folder_id": "f17"}, "ok", at=(0, 10))
    created = ex("create_folder", {"name": "r"}, '{"folder_id": "f17"}', at=(5, 20))
    v = verdict(FLOW, created, saved)
    assert not v.passed and "no clean create_folder execution ended before it" in v.reason


def test_a_flow_without_the_call_fails_and_earlier_turns_can_give_the_value() -> None:
    assert "no clean save_report call to carry the value" in verdict(FLOW).reason
    created = ex("create_folder", {"name": "r"}, '{"folder_id": "f17"}', at=(0, 10))
    saved = ex("save_report", {"folder_id": "f17"}, "ok", at=(20, 30))
    assert verdict(FLOW, saved, earlier=(created,)).passed


# idempotent writes ---------------------------------------------------------------------------------

WRITES = {"idempotent_writes": {"tools": ["transfer"], "reads": ["get_balance"]}}


def test_a_write_repeated_blindly_after_an_error_fails() -> None:
    first = ex("transfer", {"amount": 5}, None, at=(0, 10), error=True)
    again = ex("transfer", {"amount": 5}, "ok", at=(20, 30))
    v = verdict(WRITES, first, again)
    assert not v.passed
    assert (
        f"transfer errored (call {first.span_id}) and was executed again with the same arguments" in v.reason
    )


def test_a_read_in_between_or_other_arguments_make_the_retry_fine() -> None:
    first = ex("transfer", {"amount": 5}, None, at=(0, 10), error=True)
    read = ex("get_balance", {}, "100", at=(12, 15))
    again = ex("transfer", {"amount": 5}, "ok", at=(20, 30))
    assert verdict(WRITES, first, read, again).passed
    other = ex("transfer", {"amount": 6}, "ok", at=(20, 30))
    assert verdict(WRITES, first, other).passed
    clean_twice = (
        ex("transfer", {"amount": 5}, "ok", at=(0, 1)),
        ex("transfer", {"amount": 5}, "ok", at=(2, 3)),
    )
    assert verdict(WRITES, *clean_twice).passed  # not a retry after an error: `calls` bounds repeats


# state ---------------------------------------------------------------------------------------------


def test_state_paths_are_json_pointers_with_rules() -> None:
    snapshot = {"folders": [{"name": "temp"}], "cwd": "/home/a/b"}
    spec = {"state": {"/folders/0/name": {"any_of": ["temp"]}, "/cwd": {"regex": ".*/b"}}}
    assert verdict(spec, state=snapshot).passed
    v = verdict({"state": {"/folders/1/name": {"any_of": ["x"]}}}, state=snapshot)
    assert not v.passed and "state /folders/1/name is missing" in v.reason


def test_missing_snapshot_is_an_error_check_never_a_pass() -> None:
    v = verdict({"state": {"/cwd": {"ignore": True}}})
    [check] = v.checks
    assert not check.satisfied and check.detail.startswith("error: ") and "error" in check.observed
    assert not v.passed


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"flows": [{"from": "a.results.x", "to": "b.arguments.y"}]}, "is not TOOL.result"),
        ({"flows": [{"from": "a.result.x", "to": "b.arguments"}]}, "is not TOOL.arguments.PATH"),
        ({"state": {"cwd": {"any_of": [1]}}}, "must start with /"),
        ({"results": {}}, "results is empty"),
        ({"idempotent_writes": {"tools": ["a"], "reads": ["a"]}}, "both a write and a read"),
        ({"results": {"t": {"values": {"a..b": {"any_of": [1]}}}}}, "is not a key or dotted path"),
    ],
)
def test_mistakes_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Spec.model_validate({"name": "s", **fields})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"turns": [{"expected_tools": ["a"]}], "expected_tools": ["b"]},
            "expected_tools at the top of a spec",
        ),
        ({"turns": [{"select": {"task": "x"}, "expected_tools": ["a"]}]}, r"turns\[0\] sets select"),
        ({"turns": []}, "turns is empty"),
        ({"turns": [{}]}, "this spec checks nothing"),
        (
            {"profile": "reliability_eval", "expected_tools": ["a"], "results": {"a": {}}},
            "results is not checked",
        ),
    ],
)
def test_conversation_spec_mistakes_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Spec.model_validate({"name": "s", **fields})


# conversations -------------------------------------------------------------------------------------


def _conversation(*turns: tuple[Execution, ...]) -> Any:
    from scoring.evidence.conversations import Conversation
    from scoring.evidence.runs import Run

    evidence = tuple(
        Evidence(Run(f"r{i}", f"t{i}", "task", None, None, "c", 1, {}), executions, ())
        for i, executions in enumerate(turns, 1)
    )
    return Conversation("c", "task", len(turns), evidence)


def test_a_conversation_flow_counts_against_the_turn_of_the_call() -> None:
    from scoring.judge.conversation import judge_conversation

    spec = Spec.model_validate(
        {
            "name": "c",
            "turns": [{"expected_tools": ["create_folder"]}, {"expected_tools": ["save_report"]}],
            **FLOW,
        }
    )
    created = ex("create_folder", {"name": "r"}, '{"folder_id": "f17"}', at=(0, 10))
    good = judge_conversation(
        spec, _conversation((created,), (ex("save_report", {"folder_id": "f17"}, "ok", at=(20, 30)),))
    )
    assert good.passed and [c.kind for c in good.turns[1].checks] == ["expected_tool", "flows"]
    guessed = ex("save_report", {"folder_id": "f9"}, "ok", at=(20, 30))
    bad = judge_conversation(spec, _conversation((created,), (guessed,)))
    assert not bad.passed and bad.turns[0].passed and not bad.turns[1].passed
    assert bad.reason is not None and bad.reason.startswith(
        "turn 2 failed: flow create_folder.result.folder_id"
    )
    nothing = judge_conversation(spec, _conversation((created,), ()))
    assert (
        "flow create_folder.result.folder_id -> save_report.arguments.folder_id: "
        "no clean save_report call in any turn" in (nothing.reason or "")
    )


def test_the_check_order_does_not_depend_on_what_is_imported_first() -> None:
    """The conversation judge imports the flow logic before the catalogue: the checks must still
    register in catalogue order, or set-based scoring would judge every spec in Python."""
    code = (
        "import scoring.judge.conversation\n"
        "from scoring.batch._plan import BUILT_IN_CHECKS\n"
        "from scoring.checks.registry import CHECKS\n"
        "assert tuple(CHECKS) == BUILT_IN_CHECKS, tuple(CHECKS)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_a_snapshot_is_read_from_a_state_span_or_a_state_event() -> None:
    from scoring.evidence.state import snapshots_in

    as_span = snapshots_in("s1", "tracescore.state", 50, {"tracescore.state.json": '{"cwd": "/a"}'}, [])
    assert [(s.value, s.valid, s.time_ns) for s in as_span] == [({"cwd": "/a"}, True, 50)]
    event = {
        "name": "tracescore.state",
        "time_unix_nano": 40,
        "attributes": {"tracescore.state.json": "oops"},
    }
    as_event = snapshots_in("s2", "invoke_agent", 60, {}, [event, {"name": "other"}])
    assert [(s.value, s.valid, s.time_ns) for s in as_event] == [("oops", False, 40)]
    assert (
        snapshots_in("s3", "invoke_agent", 60, {"tracescore.state.json": "{}"}, []) == []
    )  # not a state span
    assert verdict({"state": {"": {"regex": "o+ps"}}}, state="oops").passed  # "" is the whole snapshot
    spec = Spec.model_validate({"name": "s", "state": {"/cwd": {}}})
    invalid = Evidence(run(), (), (), state=lambda: as_event[0])
    [check] = judge(spec, invalid).checks
    assert not check.satisfied and check.detail.startswith("error: ") and "is not JSON" in check.detail

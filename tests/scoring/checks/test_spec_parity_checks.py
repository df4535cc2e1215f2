"""The checks of issue 31 on hand-built evidence: the smallest passing and failing cases, and the
properties the end-to-end tests cannot sweep (tests/scoring/checks/test_spec_parity_e2e.py)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scoring import Evidence, Execution, Spec, Verdict, judge
from tests.scoring.checks.test_checks_catalogue import ex, run


def verdict(fields: dict[str, Any], *executions: Execution) -> Verdict:
    spec = Spec.model_validate({"name": "s", **fields})
    return judge(spec, Evidence(run(), tuple(executions), ()))


def calls(*names: str) -> list[Execution]:
    return [ex(name, {}, at=(10 * i, 10 * i + 5)) for i, name in enumerate(names)]


def subsequence(*names: str) -> dict[str, Any]:
    return {"trajectory": {"mode": "subsequence", "tools": list(names)}}


def test_subsequence_needs_a_distinct_call_for_each_item() -> None:
    assert verdict(subsequence("f", "g"), *calls("g", "f", "x", "g")).passed
    assert not verdict(subsequence("f", "f"), *calls("f")).passed
    assert not verdict(subsequence("f", "g"), *calls("g", "f")).passed


def test_subsequence_never_counts_a_failed_call() -> None:
    refused = [
        ex("f", {}, at=(0, 5)),
        ex("g", {}, at=(10, 15), error=True),
        ex("g", {}, at=(20, 25), paused=True),
    ]
    assert not verdict(subsequence("f", "g"), *refused).passed


@given(
    st.lists(st.sampled_from("abc"), min_size=1, max_size=4),
    st.lists(st.sampled_from("abc"), max_size=7),
)
def test_subsequence_agrees_with_brute_force(reference: list[str], names: list[str]) -> None:
    expected = any(
        [names[i] for i in chosen] == reference for chosen in combinations(range(len(names)), len(reference))
    )
    assert verdict(subsequence(*reference), *calls(*names)).passed is expected


def per_key(mode: str, **values: Any) -> dict[str, Any]:
    rules = {k: {"any_of": [v]} for k, v in values.items()}
    return {"argument_rules": {"f": {"mode": mode, "score": "per_key", "values": rules}}}


def test_per_key_score_is_the_best_calls_share_of_keys() -> None:
    # Ragas (_get_arg_score): keys met / reference keys; extra keys of the call change nothing.
    v = verdict(per_key("subset", a=1, b=2), ex("f", {"a": 1, "b": 9, "c": 0}), ex("f", {"b": 2, "a": 0}))
    assert v.value == 0.5 and not v.passed
    # DeepEval (_compare_dicts): keys met / the union of the reference's and the call's keys.
    v = verdict(per_key("exact", a=1, b=2), ex("f", {"a": 1, "b": 9, "c": 0}))
    assert v.value == 1 / 3
    assert verdict(per_key("exact", a=1, b=2), ex("f", {"a": 1, "b": 2})).value == 1.0
    # Arguments that are not JSON, or a call that was refused, score nothing.
    assert verdict(per_key("subset", a=1), ex("f", "a=1", valid=False)).value == 0.0
    assert verdict(per_key("subset", a=1), ex("f", {"a": 1}, error=True)).value == 0.0


def test_per_key_credit_counts_beside_whole_checks() -> None:
    v = verdict({**per_key("subset", a=1, b=2, c=3, d=4), "expected_tools": ["g"]}, ex("f", {"a": 1}))
    assert v.value == (0.25 + 0) / 2
    v = verdict({**per_key("subset", a=1, b=2), "pass_threshold": 0.5}, ex("f", {"a": 1}))
    assert (v.value, v.passed) == (0.5, True)


def test_multi_turn_bfcl_fills_in_what_a_turn_does_not_say() -> None:
    spec = Spec.model_validate(
        {
            "name": "c",
            "multi_turn": "bfcl",
            "turns": [
                {"results": {"a": {}}},
                "unchecked",
                {"expect_no_tool_calls": True},
                {
                    "results": {"a": {}},
                    "conversation_scope": ["results", "calls"],
                    "calls": {"a": {"min": 1}},
                },
            ],
        }
    )
    turns = spec.turns or []
    assert [(t.expect_tool_call, t.conversation_scope) for t in turns] == [
        (True, ["results"]),
        (None, None),
        (None, None),
        (True, ["results", "calls"]),
    ]
    again = Spec.model_validate(spec.model_dump(mode="json", exclude_none=True))
    assert again.fingerprint == spec.fingerprint

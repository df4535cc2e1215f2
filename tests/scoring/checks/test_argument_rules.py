"""`argument_rules` (issue 6, "Acceptable values"): each rule, the normalisation and the type policy,
and BFCL's own test vectors (../shared/reference/matching-rules-bfcl-agentevals.md §1.13)."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.checks._rules import fold, rules_failures, values_equal
from scoring.spec.check_models import Rule
from tests.scoring.checks.test_checks_catalogue import ex, kinds, spec, verdict


def rules(values: dict[str, dict[str, Any]]) -> dict[str, Rule]:
    return {key: Rule.model_validate(rule) for key, rule in values.items()}


def meets(
    values: dict[str, dict[str, Any]], arguments: Any, mode: str = "subset", valid: bool = True
) -> bool:
    return not rules_failures(rules(values), mode, arguments, valid)


# --- normalisation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("April 1, 2024", "april 1 2024", True),  # BFCL ✔ G
        ("New-York", "new york", True),  # punctuation separates words
        ("St. Louis", "st louis", True),
        ("  tab\tand\nnewline ", "tab and newline", True),  # whitespace runs fold
        ("ＡＢＣ", "abc", True),  # NFKC: full-width letters
        ("Straße", "STRASSE", True),  # casefold, not lower
        ("a_b", "ab", False),  # BFCL strips `_` and calls these equal; tracescore does not
        ("don't", "dont", False),  # the apostrophe is punctuation: a word break
        ("$5", "5", False),  # symbols (category S) are kept
        ("north", "south", False),
    ],
)
def test_fold(a: str, b: str, equal: bool) -> None:
    assert (fold(a) == fold(b)) is equal


def test_fold_output() -> None:
    assert fold("  April 1, 2024!! ") == "april 1 2024"


# --- type policy -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual", "equal"),
    [
        (2.0, 2, True),  # an integer is accepted where a number is expected
        (1, 1.0, True),  # numbers compare by value (BFCL ✔ I rejects this; JSON does not tell them apart)
        (1, True, False),  # a boolean is never a number
        (0, False, False),
        (True, 1, False),
        (5, "5", False),  # a string is never a number
        ("5", 5, False),
        (None, None, True),
        (None, 0, False),
        ([1, "a"], [1.0, "a"], True),
        ([1, 2], [2, 1], False),  # arrays in order
        ({"a": 1}, {"a": 1, "b": 2}, False),  # objects equal in full
    ],
)
def test_type_policy(expected: Any, actual: Any, equal: bool) -> None:
    assert values_equal(expected, actual) is equal


def test_normalize_and_tolerance_reach_nested_values() -> None:
    assert values_equal(["New York", {"c": "PARIS"}], ["new-york", {"c": "paris"}], normalize=True)
    assert values_equal({"lat": [48.85, 2.35]}, {"lat": [48.8566, 2.3522]}, tolerance=0.01)
    assert not values_equal(True, 1, tolerance=5)  # tolerance does not make a boolean a number


# --- each rule, smallest passing and failing case ----------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "arguments", "ok"),
    [
        ({"any_of": ["north", "south"]}, {"k": "south"}, True),
        ({"any_of": ["north", "south"]}, {"k": "east"}, False),
        ({"any_of": ["north"]}, {}, False),  # present unless optional
        ({"optional": True}, {}, True),
        ({"optional": True}, {"k": 3}, True),
        ({"optional": True, "any_of": [1]}, {}, True),
        ({"optional": True, "any_of": [1]}, {"k": 2}, False),  # optional, but checked when present
        ({"any_of": ["North Region"], "normalize": True}, {"k": "north-region"}, True),
        ({"any_of": ["North Region"]}, {"k": "north-region"}, False),  # normalisation is opt-in
        ({"regex": "[A-Z]{2}-[0-9]+"}, {"k": "EU-12"}, True),
        ({"regex": "[A-Z]{2}-[0-9]+"}, {"k": "EU-12 please"}, False),  # the whole string must match
        ({"regex": "[0-9]+"}, {"k": 12}, False),  # a number is not a string
        ({"range": [1, 10]}, {"k": 10}, True),  # inclusive
        ({"range": [1, 10]}, {"k": 10.5}, False),
        ({"range": [1, None]}, {"k": 1e9}, True),  # open above
        ({"range": [None, 0]}, {"k": 1}, False),
        ({"range": [0, 1]}, {"k": True}, False),  # a boolean is never a number
        ({"range": [0, 9]}, {"k": "5"}, False),  # a string is never a number
        ({"any_of": [20.0], "tolerance": 0.5}, {"k": 20.4}, True),
        ({"any_of": [20.0], "tolerance": 0.5}, {"k": 20.6}, False),
        ({"ignore": True}, {}, True),
        ({"ignore": True}, {"k": {"anything": [1]}}, True),
        ({}, {"k": None}, True),  # an empty rule: present, any value
        ({}, {}, False),
        ({"any_of": [None]}, {"k": None}, True),
    ],
)
def test_each_rule(rule: dict[str, Any], arguments: dict[str, Any], ok: bool) -> None:
    assert meets({"k": rule}, arguments) is ok


def test_dotted_paths_reach_into_nested_objects() -> None:
    values = {"filter.region": {"any_of": ["north"]}}
    assert meets(values, {"filter": {"region": "north", "since": 3}})
    assert not meets(values, {"filter": {"region": "south"}})
    assert not meets(values, {"filter": "north"})
    assert not meets(values, {"filter.region": "north"})  # a dot always separates keys


def test_exact_mode_refuses_keys_beyond_values() -> None:
    values = {"q": {"any_of": ["x"]}, "filter.region": {"any_of": ["north"]}, "debug": {"ignore": True}}
    assert meets(values, {"q": "x", "filter": {"region": "north"}}, "exact")
    assert meets(values, {"q": "x", "filter": {"region": "north"}, "debug": 1}, "exact")  # ignored, declared
    assert not meets(values, {"q": "x", "filter": {"region": "north"}, "limit": 5}, "exact")
    assert not meets(values, {"q": "x", "filter": {"region": "north", "since": 1}}, "exact")  # nested too
    assert meets(values, {"q": "x", "filter": {"region": "north", "since": 1}}, "subset")


def test_exact_mode_with_a_whole_object_declared_does_not_inspect_inside_it() -> None:
    assert meets({"filter": {}}, {"filter": {"anything": 1}}, "exact")


def test_arguments_that_cannot_meet_rules() -> None:
    values = {"q": {"any_of": ["x"]}}
    assert rules_failures(rules(values), "subset", None, False) == ["arguments are not valid JSON"]
    assert rules_failures(rules(values), "subset", None) == [
        "arguments were not captured (content capture off?)"
    ]
    assert rules_failures(rules(values), "subset", ["x"])[0].startswith("arguments are not a JSON object")
    assert meets({}, None)  # `values: {}` in subset mode: any clean call
    assert not meets({}, None, "exact")
    assert meets({}, {}, "exact")


# --- BFCL's test vectors (§1.13), as argument_rules -------------------------------------------------

BFCL = {
    "mode": "exact",
    "values": {
        "x": {"any_of": [1]},
        "r": {"any_of": [2.0]},
        "s": {"any_of": ["April 1, 2024"], "normalize": True},
        "opt": {"any_of": ["a"], "optional": True},
    },
}


@pytest.mark.parametrize(
    ("arguments", "ok"),
    [
        ({"x": 1, "r": 2, "s": "april 1 2024"}, True),  # G: int for float, normalisation, opt omitted
        ({"x": True, "r": 2, "s": "april 1 2024"}, False),  # H: a boolean is not an integer
        ({"x": 1.0, "r": 2, "s": "april 1 2024"}, True),  # I: BFCL rejects; equal as JSON numbers here
        ({"x": 1, "r": 2, "s": "april 1 2024", "zzz": 1}, False),  # J: unexpected parameter
        ({"x": 1, "r": 2, "s": "april 1 2024", "opt": "b"}, False),  # opt given a wrong value
        ({"x": 1, "r": 2}, False),  # L: s omitted and not optional
    ],
    ids=["G", "H", "I", "J", "opt-wrong", "L"],
)
def test_bfcl_vectors(arguments: dict[str, Any], ok: bool) -> None:
    v = verdict(spec(argument_rules={"f": BFCL}), ex("f", arguments))
    assert kinds(v) == [("argument_rules", "f", ok)]


def test_bfcl_k_a_key_absent_from_values_is_unexpected_in_exact_mode() -> None:
    values = {"mode": "exact", "values": {"x": {"any_of": [1]}}}
    assert verdict(spec(argument_rules={"f": values}), ex("f", {"x": 1, "opt": "b"})).passed is False
    subset = {"mode": "subset", "values": {"x": {"any_of": [1]}}}
    assert verdict(spec(argument_rules={"f": subset}), ex("f", {"x": 1, "opt": "b"})).passed is True


# --- the check ---------------------------------------------------------------------------------------


def test_one_check_per_tool_satisfied_by_some_clean_call() -> None:
    s = spec(
        argument_rules={
            "search": {"values": {"q": {"any_of": ["parcels"]}}},
            "quote": {"values": {"region": {"any_of": ["north"]}}},
        }
    )
    v = verdict(
        s, ex("search", {"q": "boxes"}), ex("search", {"q": "parcels"}), ex("quote", {"region": "south"})
    )
    assert kinds(v) == [("argument_rules", "search", True), ("argument_rules", "quote", False)]
    assert (v.passed, v.value) == (False, 0.5)
    failed = v.checks[1]
    assert failed.detail.startswith(
        "no clean quote execution meets the argument rules (1 clean call(s); closest: call"
    )
    assert 'region: "south" is not any of ["north"]' in failed.detail
    assert failed.expected == {"mode": "subset", "values": {"region": {"any_of": ["north"]}}}
    assert v.reason == failed.detail


def test_only_clean_executions_meet_rules() -> None:
    s = spec(argument_rules={"t": {"values": {"q": {"any_of": [1]}}}})
    v = verdict(
        s, ex("t", {"q": 1}, error=True), ex("t", {"q": 1}, paused=True), ex("t", {"q": 1}, history=True)
    )
    assert kinds(v) == [("argument_rules", "t", False)]
    assert v.checks[0].detail == "no clean t execution to meet the argument rules"


def test_non_json_arguments_fail_the_rules_without_crashing() -> None:
    s = spec(argument_rules={"t": {"values": {"q": {"any_of": [1]}}}})
    v = verdict(s, ex("t", None, valid=False))
    assert kinds(v) == [("argument_rules", "t", False)]
    assert "arguments are not valid JSON" in v.checks[0].detail

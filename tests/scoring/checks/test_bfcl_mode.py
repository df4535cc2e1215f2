"""`normalize: bfcl` (issue 20, "Agreement with the peers"): each of BFCL's rules, one case at a time.

The expected verdicts are BFCL's: every row of CASES was run through `simple_function_checker` of
bfcl-eval 2026.3.23 (`bfcl_eval/eval_checker/ast_eval/ast_checker.py`) with a one-parameter function
declaring TYPE and the possible answer ACCEPTABLE (an object written out here, `{"city": "New York"}`,
is BFCL's `{"city": ["New York"]}`), and gave the verdict written here (bench/bfcl_agreement.py repeats
that comparison on BFCL's whole data).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from scoring.checks._bfcl import standardize
from scoring.checks._rules import rules_failures
from scoring.spec.check_models import Rule
from scoring.spec.specs import Spec
from tests.scoring.checks.test_checks_catalogue import ex, spec, verdict

ABSENT = object()

# (BFCL type, acceptable values, the value passed or ABSENT, BFCL's verdict)
CASES: list[tuple[str, list[Any], Any, bool]] = [
    # strings: spaces and , . / - _ * ^ deleted, lowercased, ' read as "; nothing else
    ("string", ["LeBron James"], "LeBronJames", True),
    ("string", ["LeBron James"], "lebron   james", True),
    ("string", ["April 1, 2024"], "april 1 2024", True),
    ("string", ["a_b"], "ab", True),
    ("string", ["x*y^z/w"], "XYZW", True),
    ("string", ["New York"], "new-york.", True),
    ("string", ["don't"], 'don"t', True),
    ("string", ["New York"], "New\tYork", False),  # a tab is not a space
    ("string", ["New York"], "New York!", False),  # other punctuation is kept
    ("string", ["New York"], "(New York)", False),
    ("string", ["abc"], "ＡＢＣ", False),  # full-width forms are not folded
    ("string", ["ａｂｃ"], "ＡＢＣ", True),  # but lowercased
    ("string", ["5"], 5, False),  # never a number
    # "" means the parameter may be left out; for a string, an explicit "" (or spaces) matches it too
    ("string", ["metric", ""], ABSENT, True),
    ("string", ["metric", ""], "", True),
    ("string", ["metric", ""], "  ", True),
    ("string", ["metric"], ABSENT, False),
    ("integer", ["", 0], ABSENT, True),
    ("integer", ["", 0], "", False),  # a string is not an integer
    ("integer", ["", 0], 0, True),
    # numbers: int -> float at the top level only; bool is not a number; float is not an integer
    ("float", [2.0], 2, True),
    ("float", [2.0], 2.0, True),
    ("float", [0], 0.0, True),  # an int answer to a float parameter: BFCL compares with ==
    ("integer", [2], 2.0, False),
    ("integer", [1], True, False),
    ("boolean", [True], 1, False),
    ("integer", [2], "2", False),
    # arrays: order matters, string items standardised, item types checked one level deep
    ("array[string]", [["New York", "Paris"]], ["new york", "PARIS"], True),
    ("array[string]", [["New York", "Paris"]], ["Paris", "New York"], False),
    ("array[float]", [[1.0, 2.0]], [1, 2], False),  # no int -> float inside arrays
    ("array[float]", [[1.0, 2.0], ""], [1, 2], True),  # unless "" lets any item type through
    ("array[float]", [[1.0, 2.0], ""], [], True),  # and "" is the empty array
    ("array[float]", [[1, 2]], [1.0, 2.0], True),  # the declared item type
    ("array[float]", [[1, 2]], [1, 2], True),  # or the answer's own item type
    ("array[integer]", [[1, 0]], [True, False], False),
    # objects: the keys exactly, string values standardised, anything deeper compared with ==
    ("dict", [{"city": "New York", "days": 3}], {"city": "new-york", "days": 3.0}, True),
    ("dict", [{"city": "New York", "days": 3}], {"city": "New York", "days": True}, False),
    ("dict", [{"city": "New York", "days": 1}], {"city": "New York", "days": True}, True),
    ("dict", [{"city": "New York"}], {"city": "New York", "extra": 1}, False),
    ("dict", [{"city": "New York"}], {}, False),
    ("dict", [{"hand": ["A of spades"]}], {"hand": ["a of spades"]}, False),
    # arrays of objects: compared position by position, each object as above
    ("array[dict]", [[{"f": "age"}, {"f": "job"}]], [{"f": "AGE"}, {"f": "job"}], True),
    ("array[dict]", [[{"f": "age"}, {"f": "job"}]], [{"f": "job"}, {"f": "age"}], False),
    # a "variable": the answer's type is not the declared one, so the value is compared as written
    ("integer", ["x"], "x", True),
    ("integer", ["x"], "X", False),
    ("integer", ["x"], 3, False),
]


def _failures(acceptable: list[Any], value: Any, extra: dict[str, Any]) -> list[str]:
    rule = Rule.model_validate({"any_of": acceptable, **extra})
    arguments = {} if value is ABSENT else {"p": value}
    return rules_failures({"p": rule}, "exact", arguments, normalize="bfcl")


@pytest.mark.parametrize(("declared", "acceptable", "value", "valid"), CASES)
def test_each_rule_gives_bfcls_verdict(declared: str, acceptable: list[Any], value: Any, valid: bool) -> None:
    failures = _failures(acceptable, value, {"type": declared})
    assert (not failures) is valid, failures


def _inferable(declared: str, acceptable: list[Any]) -> bool:
    """The answer's own type is the declared one (and the items' too), so `type` adds nothing."""
    answer = next((type(v) for v in acceptable if v != ""), None)
    python = {"string": str, "integer": int, "float": float, "boolean": bool, "dict": dict}
    return python.get(declared.partition("[")[0], list) is answer and "[float]" not in declared


@pytest.mark.parametrize(
    ("declared", "acceptable", "value", "valid"), [case for case in CASES if _inferable(*case[:2])]
)
def test_without_type_the_answer_declares_it(
    declared: str, acceptable: list[Any], value: Any, valid: bool
) -> None:
    """Without `type`, the declared type is the answer's: the same verdicts wherever the two agree."""
    failures = _failures(acceptable, value, {})
    assert (not failures) is valid, failures


def test_standardize_is_bfcls_character_set() -> None:
    assert standardize(" ,./-_*^") == ""
    assert standardize("Tab\tNew\nLine!?") == "tab\tnew\nline!?"
    assert standardize("It's") == 'it"s'


def test_only_blank_answers_mean_leave_it_out() -> None:
    assert not _failures([""], ABSENT, {})
    assert _failures([""], "", {}) == ['p: only leaving it out is accepted: "" is not any of [""] (bfcl)']
    assert not _failures([""], "", {"type": "string"})  # BFCL: a string parameter takes ""


def test_optional_false_requires_it_even_with_a_blank_answer() -> None:
    """BFCL requires what the function requires, whatever its answer lists."""
    assert _failures(["metric", ""], ABSENT, {"optional": False}) == ["p is missing"]


def test_a_rule_may_choose_its_own_mode_under_a_spec_wide_one() -> None:
    spec_wide = Spec.model_validate(
        {
            "name": "s",
            "normalize": "bfcl",
            "argument_rules": {
                "t": {
                    "values": {
                        "who": {"any_of": ["LeBron James"]},  # bfcl, from the spec
                        "where": {"any_of": ["New York"], "normalize": True},  # tracescore's folding
                    }
                }
            },
        }
    )
    assert verdict(spec_wide, ex("t", {"who": "LeBronJames", "where": "New York!"})).passed
    assert not verdict(spec_wide, ex("t", {"who": "LeBron James!", "where": "New York"})).passed


def test_default_mode_gives_the_other_answer() -> None:
    values = {"who": {"any_of": ["LeBron James"]}, "unit": {"any_of": ["metric", ""]}}
    bfcl = spec(normalize="bfcl", argument_rules={"t": {"mode": "exact", "values": values}})
    folded = spec(normalize=True, argument_rules={"t": {"mode": "exact", "values": values}})
    joined = ex("t", {"who": "LeBronJames"})  # and unit left out
    punctuated = ex("t", {"who": "LeBron James!", "unit": "metric"})
    assert verdict(bfcl, joined).passed and not verdict(folded, joined).passed
    assert verdict(folded, punctuated).passed and not verdict(bfcl, punctuated).passed
    failed = verdict(bfcl, punctuated).checks[0]
    assert failed.detail.endswith('who: "LeBron James!" is not any of ["LeBron James"] (bfcl))')


def test_parallel_calls_keep_optimal_matching_in_bfcl_mode() -> None:
    """BFCL's first fit fails [f(1), f(2)] against [f(x∈{1,2}), f(x∈{1})] (its counterexample M);
    tracescore's matching pairs them, in bfcl mode too. An item in exact mode refuses extra keys."""
    items = [
        {"tool": "f", "mode": "exact", "values": {"x": {"any_of": [1, 2]}}},
        {"tool": "f", "mode": "exact", "values": {"x": {"any_of": [1]}}},
    ]
    bfcl = spec(normalize="bfcl", trajectory={"mode": "unordered", "tools": items})
    assert verdict(bfcl, ex("f", {"x": 1}), ex("f", {"x": 2})).passed
    assert not verdict(bfcl, ex("f", {"x": 1}), ex("f", {"x": 2.0})).passed  # 2.0 is not an integer
    assert not verdict(bfcl, ex("f", {"x": 1}), ex("f", {"x": 2, "y": 0})).passed


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"normalize": "bfcl", "expected_tools": ["t"]}, "this spec has no any_of that uses it"),
        (
            {
                "normalize": "bfcl",
                "argument_rules": {"t": {"values": {"x": {"any_of": [1], "tolerance": 1}}}},
            },
            "tolerance has no place in normalize: bfcl",
        ),
        ({"argument_rules": {"t": {"values": {"x": {"any_of": [1], "type": "integer"}}}}}, "drop type"),
        (
            {"argument_rules": {"t": {"values": {"x": {"any_of": [1], "type": "int", "normalize": "bfcl"}}}}},
            "type 'int' is not one of string, integer, float",
        ),
        ({"normalize": "BFCL", "argument_rules": {"t": {"values": {"x": {"any_of": [1]}}}}}, "normalize"),
    ],
)
def test_a_mode_that_cannot_apply_is_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Spec.model_validate({"name": "s", **fields})

"""Property tests for argument matching: `json_equal` is JSON equality, `matches_subset` a top-level
subset match with it (issue 4: "Equality is JSON equality: 1 == 1.0, but true is not 1 and "5" is not 5")."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scoring import json_equal, matches_subset

SAFE_INT = 2**53  # every int up to here has an exact float

numbers = st.integers(-SAFE_INT, SAFE_INT) | st.floats(allow_nan=False, allow_infinity=False)
scalars = st.none() | st.booleans() | numbers | st.text(max_size=4)
keys = st.text(max_size=3)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(keys, children, max_size=3),
    max_leaves=6,
)
calls = st.dictionaries(keys, json_values, max_size=4)

quick = settings(max_examples=60, deadline=None)


# --- json_equal ----------------------------------------------------------------------------------------


@quick
@given(json_values)
def test_equal_is_reflexive(value: Any) -> None:
    assert json_equal(value, value)
    assert json_equal(value, copy.deepcopy(value))


@quick
@given(json_values)
def test_equal_survives_a_json_round_trip(value: Any) -> None:
    assert json_equal(value, json.loads(json.dumps(value)))


@quick
@given(json_values, json_values)
def test_equal_is_symmetric(a: Any, b: Any) -> None:
    assert json_equal(a, b) == json_equal(b, a)


@quick
@given(json_values, json_values, json_values)
def test_equal_is_transitive(a: Any, b: Any, c: Any) -> None:
    if json_equal(a, b) and json_equal(b, c):
        assert json_equal(a, c)


@quick
@given(st.booleans(), numbers)
def test_a_bool_never_equals_a_number(flag: bool, number: int | float) -> None:
    assert not json_equal(flag, number)
    assert not json_equal(number, flag)
    assert not json_equal([flag], [number])
    assert not json_equal({"k": flag}, {"k": number})


@quick
@given(st.integers(-SAFE_INT, SAFE_INT))
def test_an_int_equals_its_float(number: int) -> None:
    assert json_equal(number, float(number))
    assert json_equal({"n": [number]}, {"n": [float(number)]})


@quick
@given(numbers)
def test_a_number_never_equals_its_string(number: int | float) -> None:
    assert not json_equal(number, json.dumps(number))
    assert not json_equal(str(number), number)


@quick
@given(json_values)
def test_null_equals_only_null(value: Any) -> None:
    assert json_equal(None, value) == (value is None)


@quick
@given(st.dictionaries(keys, json_values, min_size=1, max_size=4), keys, json_values)
def test_objects_are_equal_in_full(obj: dict[str, Any], extra: str, value: Any) -> None:
    assume(extra not in obj)
    assert not json_equal(obj, {**obj, extra: value})
    assert not json_equal({**obj, extra: value}, obj)


@quick
@given(st.lists(json_values, min_size=2, max_size=4), st.data())
def test_lists_are_equal_in_order(items: list[Any], data: st.DataObject) -> None:
    i, j = data.draw(st.permutations(range(len(items))))[:2]
    assume(not json_equal(items[i], items[j]))
    swapped = list(items)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    assert not json_equal(items, swapped)
    assert not json_equal(items, items[:-1])


@quick
@given(json_values, json_values)
def test_values_that_serialise_differently_are_unequal_unless_numbers_differ_in_form(a: Any, b: Any) -> None:
    """Equal JSON values serialise alike once numbers are put in one form."""

    def normal(value: Any) -> Any:
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return value
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, list):
            return [normal(v) for v in value]
        return {k: normal(v) for k, v in value.items()}

    if json_equal(a, b):
        assert json.dumps(normal(a), sort_keys=True) == json.dumps(normal(b), sort_keys=True)


# --- matches_subset ------------------------------------------------------------------------------------


@quick
@given(calls, st.data())
def test_a_sub_dict_of_the_call_always_matches(call: dict[str, Any], data: st.DataObject) -> None:
    chosen = data.draw(st.lists(st.sampled_from(sorted(call)), unique=True) if call else st.just([]))
    spec = {key: json.loads(json.dumps(call[key])) for key in chosen}
    assert matches_subset(spec, call)


@quick
@given(calls)
def test_a_call_matches_itself(call: dict[str, Any]) -> None:
    assert matches_subset(call, call)


@quick
@given(calls, keys, json_values)
def test_extra_keys_in_the_call_never_stop_a_match(call: dict[str, Any], key: str, value: Any) -> None:
    assume(key not in call)
    assert matches_subset(call, {**call, key: value})


@quick
@given(calls, json_values, st.data())
def test_a_spec_key_with_a_different_value_never_matches(
    call: dict[str, Any], value: Any, data: st.DataObject
) -> None:
    assume(call)
    key = data.draw(st.sampled_from(sorted(call)))
    assume(not json_equal(value, call[key]))
    assert not matches_subset({**call, key: value}, call)
    assert not matches_subset({key: value}, call)


@quick
@given(calls, keys, json_values)
def test_a_spec_key_missing_from_the_call_never_matches(call: dict[str, Any], key: str, value: Any) -> None:
    assume(key not in call)
    assert not matches_subset({key: value}, call)  # null included: the key must be present


@quick
@given(calls, calls)
def test_subset_match_is_per_key_json_equality(spec: dict[str, Any], call: dict[str, Any]) -> None:
    expected = all(key in call and json_equal(value, call[key]) for key, value in spec.items())
    assert matches_subset(spec, call) == expected


@quick
@given(json_values)
def test_the_empty_spec_matches_any_arguments(arguments: Any) -> None:
    assert matches_subset({}, arguments)


@quick
@given(st.dictionaries(keys, json_values, min_size=1, max_size=3), json_values)
def test_arguments_that_are_not_an_object_match_no_spec_with_keys(
    spec: dict[str, Any], arguments: Any
) -> None:
    assume(not isinstance(arguments, dict))
    assert not matches_subset(spec, arguments)

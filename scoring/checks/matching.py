"""Argument matching with JSON equality (not Python's `==`, where `True == 1`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def json_equal(expected: Any, actual: Any) -> bool:
    """JSON equality: `1 == 1.0`, but `true` is not `1` and `"5"` is not `5`; objects equal in full,
    arrays equal in order."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected is actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(json_equal(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            json_equal(e, a) for e, a in zip(expected, actual, strict=True)
        )
    if expected is None or actual is None:
        return expected is None and actual is None
    return type(expected) is type(actual) and bool(expected == actual)


def matches_subset(spec: Mapping[str, Any], arguments: Any) -> bool:
    """Every key of the spec is present in the call with an equal value; extra keys in the call are fine."""
    if not spec:
        return True  # `{}` is satisfied by any clean call, captured arguments or not
    if not isinstance(arguments, dict):
        return False
    return all(key in arguments and json_equal(value, arguments[key]) for key, value in spec.items())

"""`normalize: bfcl`: one argument judged as BFCL's AST checker judges it (docs/checks.md, "BFCL mode").

The facts come from BFCL's source, `bfcl_eval/eval_checker/ast_eval/ast_checker.py` (PyPI `bfcl-eval`
2026.3.23; functions `standardize_string`, `type_checker`, `string_checker`, `list_checker`,
`dict_checker`, `list_dict_checker`, `simple_function_checker`). This is a reimplementation checked
against that file by bench/bfcl_agreement.py, not a copy of it.

BFCL takes a parameter's type from the function's declaration. A rule may declare it (`type: float`,
`type: array[integer]`); without it, the declared type is the type of the first acceptable value that
is not `""` (BFCL's own "possible answer type"): write `2.0`, not `2`, for a float parameter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from scoring.spec.check_models import BFCL_ARRAY, BFCL_TYPES

# BFCL deletes spaces and these seven characters, nothing else: not tabs, not other punctuation.
_DELETED = re.compile(r"[ ,./\-_*^]")


def standardize(text: str) -> str:
    """BFCL's string normalisation: spaces and `,./-_*^` deleted, lowercased, `'` read as `"`."""
    return _DELETED.sub("", text).lower().replace("'", '"')


def omittable(acceptable: Sequence[Any]) -> bool:
    """`""` among BFCL's acceptable values means the parameter may be left out."""
    return any(_blank(v) for v in acceptable)


def _blank(value: Any) -> bool:
    return isinstance(value, str) and value == ""


def declared_type(acceptable: Sequence[Any]) -> type | None:
    return next((type(v) for v in acceptable if not _blank(v)), None)


def _standardized(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def _contains(values: Sequence[Any], value: Any) -> bool:
    # BFCL compares with Python's `in`: `==` where types were not checked first, so 1 == 1.0 == True.
    return any(value == v for v in values)


def _item_type(acceptable: Sequence[Any]) -> type | None:
    """The declared type of an array's items: that of the first item of the first non-empty list."""
    for candidate in acceptable:
        if isinstance(candidate, list) and (found := declared_type(candidate)) is not None:
            return found
    return None


def _items_typed(value: list[Any], acceptable: Sequence[Any], item_type: type | None) -> bool:
    """BFCL's one-level check of an array's items: some acceptable value lets every item through, by the
    declared item type or by the type of that list's own first item. A `""` lets anything through."""
    for candidate in acceptable:
        if not isinstance(candidate, list):
            return True
        own = declared_type(candidate)
        if all(type(item) is item_type or type(item) is own for item in value):
            return True
    return False


def _dict_equal(value: dict[str, Any], candidate: Any) -> bool:
    """One written-out acceptable object: the same keys; string values standardised, every other value
    (lists, nested objects) compared with plain `==`."""
    if not isinstance(candidate, dict) or value.keys() != candidate.keys():
        return False
    return all(_standardized(v) == _standardized(candidate[k]) for k, v in value.items())


def _list_of_dicts_equal(value: list[Any], candidate: Any) -> bool:
    if isinstance(candidate, str):
        return candidate == "" and not value  # BFCL's positional check finds `""` as long as `[]`
    return len(value) == len(candidate) and all(
        isinstance(v, dict) and _dict_equal(v, c) for v, c in zip(value, candidate, strict=True)
    )


def _list_equal(value: list[Any], candidate: Any) -> bool:
    # BFCL standardises the string items of both lists, then `==`; it walks a string acceptable value as
    # the list of its characters, so `""` stands for the empty list.
    items = list(candidate) if isinstance(candidate, str) else candidate
    return isinstance(items, list) and [_standardized(v) for v in value] == [_standardized(c) for c in items]


def _declared(declared: str | None, acceptable: Sequence[Any]) -> tuple[type | None, type | None]:
    """(type, item type) of a parameter: its `type`, else guessed from the acceptable values."""
    if declared is None:
        guess = declared_type(acceptable)
        return guess, _item_type(acceptable) if guess is list else None
    array = BFCL_ARRAY.fullmatch(declared)
    if array:
        return list, BFCL_TYPES[array.group(2)]
    expected = BFCL_TYPES[declared]
    return expected, _item_type(acceptable) if expected is list else None


def _typed(value: Any, expected: type | None, answer: type | None) -> tuple[bool, bool]:
    """(type accepted, read as a variable): BFCL lets a value of the answer's type through where that
    type is not the declared one (a variable name written for a number), and then compares it with `in`
    only."""
    variable = answer is not None and answer is not expected
    if type(value) is expected:
        return True, variable
    return answer is not None and type(value) is answer, True


def failure(value: Any, acceptable: Sequence[Any], declared: str | None = None) -> str | None:
    """Why BFCL would reject this value of a parameter that was passed, or None. `declared` is the
    parameter's BFCL type (`integer`, `array[float]`, …); without it, the acceptable values say."""
    expected, item_type = _declared(declared, acceptable)
    if expected is None:  # only `""` and no declaration: no type a value could have, only leaving it out
        return "only leaving it out is accepted"
    if expected is float and type(value) is int:
        value = float(value)  # BFCL's only coercion, and only here: never inside lists or objects
    accepted, variable = _typed(value, expected, declared_type(acceptable))
    if not accepted:
        return f"type {type(value).__name__} is not {expected.__name__}"
    if type(value) is list and expected is list and not _items_typed(value, acceptable, item_type):
        return f"items are not all {item_type.__name__ if item_type else 'of the declared type'}"
    if variable:
        ok = _contains(acceptable, value)
    elif isinstance(value, str):
        ok = standardize(value) in [standardize(v) for v in acceptable if type(v) is str]
    elif isinstance(value, dict):
        ok = any(_dict_equal(value, c) for c in acceptable if not _blank(c))
    elif isinstance(value, list):
        check = _list_of_dicts_equal if item_type is dict else _list_equal
        ok = any(check(value, c) for c in acceptable)
    else:
        ok = _contains(acceptable, value)
    return None if ok else "value"

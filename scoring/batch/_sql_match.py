"""`matches_subset` and `json_equal` (scoring/checks/matching.py) as DuckDB SQL over stored argument text.

Values are compared as DuckDB re-serialises them (`json_extract` writes every value it returns
afresh): a scalar is JSON-equal to the spec's value exactly when its text is one of a few constant
texts, which DuckDB itself writes from the spec's value once, at plan time (`1` also as `1.0`, `0`
also as `-0.0`, an integer too large for 64 bits as its digits). Containers are compared member by
member.

The stored arguments are the text as received, so a key may occur twice; Python's `json.loads` keeps
the last value and DuckDB's lookups find the first. When the text cannot hold a key twice (no escape
sequence, and the key's quoted name occurs once) the direct lookup is taken; otherwise the member is
read by position from `json_keys` and the `$.*` values, which list every occurrence in order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scoring.batch import _sql_literal as lit
from scoring.batch._sql_literal import NotCompilable

_MAX_NODES = 2_000  # values in one argument spec; larger ones are judged in Python
_WHITESPACE = "' ' || chr(9) || chr(10) || chr(13)"  # JSON's


def _nodes(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_nodes(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_nodes(v) for v in value)
    return 1


def _written(value: Any) -> str:
    """DuckDB's text for a JSON scalar, as a constant expression (folded when the query is planned)."""
    return f"json_extract({lit.string('[' + json.dumps(value) + ']')}, '$[0]')::VARCHAR"


def _texts(expected: Any) -> list[str]:
    """Every text of a value JSON-equal to the scalar `expected`."""
    if isinstance(expected, bool) or expected is None:
        return [lit.string(json.dumps(expected))]
    if isinstance(expected, str):
        return [_written(expected)]
    if isinstance(expected, int):
        texts = [lit.string(str(expected))]
        try:
            if float(expected) == expected:  # Python compares an int and a float exactly
                texts.append(_written(float(expected)))
        except OverflowError:
            pass
    elif isinstance(expected, float):
        texts = [_written(expected)]
        if expected.is_integer():
            texts.append(lit.string(str(int(expected))))
    else:
        raise NotCompilable(f"{expected!r} is not a JSON value")
    if expected == 0:
        texts += [_written(0.0), _written(-0.0)]
    return list(dict.fromkeys(texts))


def member(keys: str, values: str, key: str) -> str:
    """The last value stored under `key` (NULL when absent), from an object's keys and `$.*` values."""
    return f"{values}[len({keys}) + 1 - list_position(list_reverse({keys}), {lit.string(key)})]"


def equal(json_text: str, expected: Any) -> str:
    """SQL that is true when the JSON text is JSON-equal to `expected` (NULL when the text is NULL)."""
    if isinstance(expected, list):
        parts = [f"json_type({json_text}) = 'ARRAY'", f"json_array_length({json_text}) = {len(expected)}"]
        parts += [equal(f"json_extract({json_text}, '$[{i}]')", item) for i, item in enumerate(expected)]
        return "(" + " AND ".join(parts) + ")"
    if isinstance(expected, dict):
        keys, values = f"json_keys({json_text})", f"json_extract({json_text}, '$.*')"
        if not expected:
            return f"(json_type({json_text}) = 'OBJECT' AND len({keys}) = 0)"
        parts = [
            f"json_type({json_text}) = 'OBJECT'",
            f"list_sort(list_distinct({keys})) = {lit.strings(sorted(expected))}",
        ]
        parts += [equal(member(keys, values, k), v) for k, v in expected.items()]
        return "(" + " AND ".join(parts) + ")"
    return f"(({json_text})::VARCHAR IN ({', '.join(_texts(expected))}))"


def _pointer(key: str) -> str:
    """A JSON Pointer to a member of an object (RFC 6901), which quotes nothing and so names any key."""
    return lit.string("/" + key.replace("~", "~0").replace("/", "~1"))


def _once(text: str, key: str) -> str:
    """True when the key's quoted name occurs at most once in text without escape sequences."""
    return f"len(string_split({text}, {lit.string(json.dumps(key, ensure_ascii=False))})) <= 2"


def subset(expected: Mapping[str, Any], arguments: str) -> str:
    """SQL for `matches_subset(expected, arguments)` over a JSON column of stored arguments (NULL
    arguments never match). `{}` is left to the caller: it needs a clean call, not arguments."""
    if _nodes(dict(expected)) > _MAX_NODES:
        raise NotCompilable(f"an argument spec of more than {_MAX_NODES} values")
    text = f"{arguments}::VARCHAR"
    # An object's text starts with `{` after any whitespace; clients rarely send the whitespace.
    trimmed = f"ltrim({text}, {_WHITESPACE})"
    is_object = f"(CASE WHEN starts_with({text}, '{{') THEN true ELSE starts_with({trimmed}, '{{') END)"
    direct = [f"NOT contains({text}, '\\')"] + [_once(text, key) for key in expected]
    fast = [equal(f"json_extract({arguments}, {_pointer(key)})", value) for key, value in expected.items()]
    keys, values = f"json_keys({arguments})", f"json_extract({arguments}, '$.*')"
    slow = [
        f"list_contains({keys}, {lit.string(key)}) AND {equal(member(keys, values, key), value)}"
        for key, value in expected.items()
    ]
    return (
        f"coalesce(CASE WHEN NOT {is_object} THEN false "
        f"WHEN {' AND '.join(direct)} THEN {' AND '.join(fast)} "
        f"ELSE {' AND '.join(slow)} END, false)"
    )

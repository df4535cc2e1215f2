"""JSON text assembled by SQL string concatenation, for verdicts built set-based.

DuckDB's json_object re-parses every nested JSON argument, so a verdict built bottom-up that way is
parsed once per level; concatenation parses nothing and only escapes the strings that come from data
(`to_json` of a VARCHAR). Every fragment here is a SQL expression whose value is JSON text, never NULL.
"""

from __future__ import annotations

import json
from typing import Any

from scoring.batch import _sql_literal as lit


def value(expression: str) -> str:
    """Any SQL scalar or list as JSON (strings escaped, NULL as null)."""
    return f"coalesce(to_json({expression}), 'null')"


def constant(data: Any) -> str:
    return lit.string(json.dumps(data, allow_nan=False, separators=(",", ":")))


def boolean(expression: str) -> str:
    return f"(CASE WHEN {expression} THEN 'true' WHEN NOT ({expression}) THEN 'false' ELSE 'null' END)"


def integer(expression: str) -> str:
    return f"coalesce(({expression})::VARCHAR, 'null')"


def obj(pairs: list[tuple[str, str]]) -> str:
    """An object from (key, JSON text expression) pairs, keys in the order given."""
    parts = []
    for i, (key, text) in enumerate(pairs):
        opening = "{" if i == 0 else ","
        parts.append(lit.string(f"{opening}{json.dumps(key)}:"))
        parts.append(text)
    parts.append("'}'")
    # One concat, not a chain of ||: each || copies everything before it.
    return f"concat({', '.join(parts)})"


def array(items: list[str]) -> str:
    """An array of the items that are not NULL (each item a JSON text expression, or NULL to leave out)."""
    if not items:
        return "'[]'"
    return f"concat('[', concat_ws(',', {', '.join(items)}), ']')"

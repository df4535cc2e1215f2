"""Spec constants written into generated SQL as literals.

Set-based scoring compiles a spec's names and values into its query text (DuckDB folds constants and
plans a literal path once, where a bound parameter is re-read per row). Everything that enters SQL
text goes through here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


class NotCompilable(ValueError):
    """A spec value that the generated SQL cannot carry exactly; the spec is judged in Python instead."""


def string(text: str) -> str:
    if "\x00" in text:
        raise NotCompilable("a NUL character in a name or value")
    return "'" + text.replace("'", "''") + "'"


def strings(texts: Iterable[str]) -> str:
    """A VARCHAR[] literal (typed, so an empty list still has a type)."""
    return "[" + ", ".join(string(t) for t in texts) + "]::VARCHAR[]"


def double(value: float) -> str:
    if not math.isfinite(value):
        raise NotCompilable(f"{value} is not a finite number")
    return f"{string(repr(float(value)))}::DOUBLE"


def exact_double(value: int | float) -> str:
    """A number DuckDB compares as a DOUBLE, refused when the conversion would change it (Python
    compares an int and a float exactly, DuckDB after converting the int)."""
    try:
        exact = float(value) == value
    except OverflowError:
        exact = False
    if not exact:
        raise NotCompilable(f"{value} has no exact binary floating-point value")
    return double(float(value))

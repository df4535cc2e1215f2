"""What counts as a JSON value in a spec file (YAML also makes dates, times and NaN)."""

from __future__ import annotations

import math
from typing import Any


def not_json(value: Any) -> str | None:
    """Why a spec value is not a JSON value, or None."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number"
    if isinstance(value, list):
        return next((p for p in map(not_json, value) if p), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return "an object key is not a string"
        return next((p for p in map(not_json, value.values()) if p), None)
    return f"{value!r} is a {type(value).__name__}, not a JSON value"

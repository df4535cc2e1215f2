"""JSON text for DuckDB JSON columns: always valid JSON, whatever a span carried."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

_COMPACT = (",", ":")
# Built once: json.dumps with any keyword argument builds a new encoder on every call, which cost more
# than the encoding itself for a span's attributes.
_STRICT = json.JSONEncoder(separators=_COMPACT, allow_nan=False, ensure_ascii=False)
_LENIENT = json.JSONEncoder(separators=_COMPACT, ensure_ascii=False, default=str)


def _finite(value: Any) -> Any:
    # JSON has no NaN or Infinity; DuckDB's JSON type rightly refuses them, so they are kept as strings.
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def to_json(value: Any) -> str | None:
    """Compact JSON text of a value, or None (SQL NULL) for None."""
    if value is None:
        return None
    try:
        text = orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits, keys that are not text, lone surrogates, other types
        return _stdlib(value)
    # orjson writes NaN and the infinities as null; the json module path keeps them (as strings). A null
    # that was a None takes the slower path too, with the same result.
    if b"null" in text:
        return _stdlib(value)
    return text.decode()


def _stdlib(value: Any) -> str:
    try:
        return _STRICT.encode(value)
    except (ValueError, TypeError):
        return _LENIENT.encode(_finite(value))

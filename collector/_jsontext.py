"""JSON text for DuckDB JSON columns: always valid JSON, whatever a span carried."""

from __future__ import annotations

import json
import math
from typing import Any

_COMPACT = (",", ":")


class JsonText(str):
    """Text already known to be valid JSON: stored as is, never parsed and dumped again."""

    __slots__ = ()


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
    if isinstance(value, JsonText):
        return str(value)
    try:
        return json.dumps(value, separators=_COMPACT, allow_nan=False, ensure_ascii=False)
    except ValueError:
        return json.dumps(_finite(value), separators=_COMPACT, ensure_ascii=False, default=str)
    except TypeError:
        return json.dumps(_finite(value), separators=_COMPACT, ensure_ascii=False, default=str)

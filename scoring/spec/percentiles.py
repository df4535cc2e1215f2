"""The latency keys' plain data: which percentiles a spec may bound, and how long a `window` is.

Apart from the spec models (check_models) because the task aggregate reads them too, and it runs where
no spec is loaded (a server's task API, `tracescore diff`): here they cost no pydantic (issue 33).
"""

from __future__ import annotations

import re

_WINDOW = re.compile(r"^([1-9][0-9]*)(s|m|h|d)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}

PERCENTILES: dict[str, int] = {"p50_ms": 50, "p95_ms": 95, "p99_ms": 99}


def window_seconds(window: str) -> int:
    match = _WINDOW.match(window)
    if match is None:
        raise ValueError(f"window {window!r} is not a duration such as 30s, 15m, 1h or 1d")
    return int(match.group(1)) * _UNIT_S[match.group(2)]

"""What one check counts for in a verdict's `value` (docs/checks.md): 1 when satisfied, 0 when not, or,
for a check asked for partial credit (`score: per_key` in its own arguments), the `score` it observed."""

from __future__ import annotations

from scoring.verdict.record import CheckResult


def credit(check: CheckResult) -> float:
    if (
        isinstance(check.expected, dict)
        and check.expected.get("score") == "per_key"
        and isinstance(check.observed, dict)
        and isinstance(score := check.observed.get("score"), int | float)
    ):
        return float(score)
    return 1.0 if check.satisfied else 0.0

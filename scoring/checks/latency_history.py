"""Latency over history: `latency: {p50_ms|p95_ms|p99_ms: {TOOL: ms}, window: 1h}`, judged per task.

A percentile of one run says little; over a task's runs (and, for production traffic, per time window)
it is the figure people set targets on. Each verdict carries its run's samples in `detail.latency_history`
(with the bounds, so the aggregate needs nothing but verdicts: stored ones, a saved `score` file, a
server's); the task aggregate computes the percentiles.

Percentiles are nearest-rank: the value at position ceil(p/100 · n) of the n sorted durations (so p50
of [10, 20] is 10 and p95 of fewer than 20 samples is the maximum). Windows are aligned to the Unix
epoch by execution start time (window 1h: 00:00–01:00 UTC, 01:00–02:00, …).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from scoring.spec.percentiles import PERCENTILES, window_seconds

if TYPE_CHECKING:  # the task aggregate imports this module where no spec is loaded (issue 33)
    from scoring.checks.registry import Scoped
    from scoring.spec.specs import Spec

DETAIL_KEY = "latency_history"


def samples(spec: Spec, evidence: Scoped) -> dict[str, Any] | None:
    """What a verdict keeps for the task aggregate, or None when the spec has no percentile bound."""
    if spec.latency is None or not spec.latency.percentiles:
        return None
    bounds = spec.latency.percentiles
    every = any("*" in per_tool for per_tool in bounds.values())
    named = {tool for per_tool in bounds.values() for tool in per_tool}
    return {
        "bounds": bounds,
        "window": spec.latency.window,
        "samples": [
            {"tool": e.tool_name, "span_id": e.span_id, "start_ns": e.start_ns, "duration_ms": e.duration_ms}
            for e in evidence.clean
            if every or e.tool_name in named
        ],
    }


def nearest_rank(durations: list[float], percentile: int) -> float:
    ordered = sorted(durations)
    return ordered[max(math.ceil(percentile / 100 * len(ordered)), 1) - 1]


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _windows(
    items: list[dict[str, Any]], window: str | None
) -> list[tuple[str | None, str | None, list[float]]]:
    if window is None:
        return [(None, None, [s["duration_ms"] for s in items])]
    size = window_seconds(window)
    grouped: dict[int, list[float]] = {}
    for s in items:
        grouped.setdefault(int(s["start_ns"]) // 1_000_000_000 // size, []).append(s["duration_ms"])
    return [(_iso(i * size), _iso((i + 1) * size), grouped[i]) for i in sorted(grouped)]


def evaluate(details: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per tool, percentile (and window): the bound, the observed percentile and whether it held.

    `details` are the `latency_history` details of one task's verdicts for one spec; bounds and window
    are read from the first (one spec has one set)."""
    details = list(details)
    if not details:
        return []
    bounds: dict[str, dict[str, float]] = details[0]["bounds"]
    window: str | None = details[0].get("window")
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for detail in details:
        for sample in detail.get("samples", []):
            by_tool.setdefault(sample["tool"], []).append(sample)
    results = []
    for tool in sorted(by_tool):
        for key, per_tool in bounds.items():
            bound = per_tool.get(tool, per_tool.get("*"))
            if bound is None:
                continue
            for start, end, durations in _windows(by_tool[tool], window):
                observed = nearest_rank(durations, PERCENTILES[key])
                results.append(
                    {
                        "tool": tool,
                        "percentile": key.removesuffix("_ms"),
                        "bound_ms": bound,
                        "observed_ms": observed,
                        "n": len(durations),
                        "satisfied": observed <= bound,
                        "window_start": start,
                        "window_end": end,
                    }
                )
    return results

"""Percentiles as the benchmarks report them: nearest rank, with values that never arrived counted."""

from __future__ import annotations


def percentile(values: list[float], p: float) -> float:
    """The value at rank `p` (0..1) of `values`, NaN when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


def summary(values: list[float], missing: int = 0, scale: float = 1.0) -> dict[str, float | int | None]:
    """p50, p99 and max of `values` times `scale`, where `missing` more values never came (a verdict
    not seen before the watch gave up): they rank above every value, so a percentile that falls on
    one is None, unknown but longer than anything measured."""
    ordered = sorted(values)
    total = len(ordered) + missing

    def at(p: float) -> float | None:
        if not total:
            return None
        rank = min(total - 1, int(p * total))
        return ordered[rank] * scale if rank < len(ordered) else None

    return {"n": len(ordered), "missing": missing, "p50": at(0.5), "p99": at(0.99), "max": at(1.0)}

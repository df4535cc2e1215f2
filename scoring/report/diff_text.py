"""`tracescore diff` and `compare` as a table a person reads: per task and spec, both pass rates with
their intervals, the difference, the exact test's p-value and what changed; then a legend."""

from __future__ import annotations

from collections.abc import Sequence

from scoring.report.diff import INTERVAL_NAME, TEST_NAME, TaskDelta
from scoring.report.text import number, table

HEADER = [
    "TASK",
    "SPEC",
    "BEFORE",
    "PASSED",
    "CI",
    "AFTER",
    "PASSED",
    "CI",
    "DELTA",
    "P",
    "P ADJ",
    "K",
    "PASS@K",
    "PASS^K",
    "CHANGE",
]


def _interval(interval: tuple[float, float] | None) -> str:
    return "-" if interval is None else f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def p_text(p_value: float | None) -> str:
    if p_value is None:
        return "-"
    return "<0.0001" if p_value < 0.0001 else f"{p_value:.4f}"


def _pair(before: float | None, after: float | None) -> str:
    if before is None and after is None:
        return "-"
    return f"{number(before)}>{number(after)}"


def _change(delta: TaskDelta) -> str:
    if delta.change in ("improved", "regressed"):
        return f"{delta.change} ({'significant' if delta.significant else 'not significant'})"
    return delta.change


def _passed(passed: int, n: int) -> str:
    return f"{passed}/{n}" if n else "-"


def deltas_text(
    deltas: Sequence[TaskDelta],
    *,
    alpha: float,
    adjust: str = "holm",
    before: str = "before",
    after: str = "after",
) -> str:
    if not deltas:
        return "no task and spec on either side"
    confidence = f"{(1 - alpha) * 100:g}%"
    header = [*HEADER]
    header[4] = header[7] = f"{confidence} CI"
    rows = [
        [
            d.task or "-",
            d.spec,
            number(d.before),
            _passed(d.passed_before, d.n_before),
            _interval(d.before_interval),
            number(d.after),
            _passed(d.passed_after, d.n_after),
            _interval(d.after_interval),
            "-" if d.delta is None else f"{d.delta:+.2f}",
            p_text(d.p_value),
            p_text(d.p_adjusted),
            "-" if d.k is None else str(d.k),
            _pair(d.pass_at_k_before, d.pass_at_k_after),
            _pair(d.pass_hat_k_before, d.pass_hat_k_after),
            _change(d),
        ]
        for d in deltas
    ]
    out = table(header, rows, {0: 32, 1: 28})
    tested = sum(1 for d in deltas if d.p_value is not None)
    adjusted = f"adjusted by Holm's method over {tested} test(s)" if adjust == "holm" else "P, not adjusted"
    regressed = sum(1 for d in deltas if d.significant_regression)
    improved = sum(1 for d in deltas if d.significant and d.change == "improved")
    out += [
        "",
        f"BEFORE: {before}; AFTER: {after}; pass rates with passed/scored runs and their {INTERVAL_NAME} "
        f"{confidence} interval; P: {TEST_NAME}; P ADJ: {adjusted} (significant when P ADJ <= {alpha:g}); "
        "PASS@K and PASS^K before>after with one K",
        f"{len(deltas)} task/spec pair(s): {regressed} significant regression(s), {improved} significant "
        "improvement(s)",
    ]
    return "\n".join(out)

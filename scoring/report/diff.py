"""`tracescore diff` and `tracescore compare`: per task and spec, the pass rate before and after, each
with its confidence interval, and whether the change is more than noise (scoring/report/stats.py).

Results are comparable only when each spec has the same fingerprint on both sides: otherwise a changed
spec, not a changed agent, may explain the difference.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from scoring.report.aggregate import TaskResult, aggregate, pass_at_k, pass_hat_k
from scoring.report.stats import fisher_exact, holm_adjusted, wilson_interval
from scoring.verdict.record import verdict_from_dict

_UNCHANGED = 1e-9
DEFAULT_ALPHA = 0.05
TEST_NAME = "Fisher's exact test, two-sided"
# How the p-values of many task/spec pairs are adjusted before they are compared with alpha: Holm's
# step-down method (the family-wise error stays at alpha however many pairs), or not at all.
ADJUSTMENTS = ("holm", "none")
INTERVAL_NAME = "Wilson score"


class DiffError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class TaskDelta:
    """One task and spec on both sides. `change` is read from the point estimates (improved, regressed,
    unchanged; new, gone or unscored when a side has no scored run); `significant` says whether Fisher's
    exact test rejects equal pass rates at the chosen alpha: `p_adjusted` <= alpha, where `p_adjusted`
    is Holm's adjustment over every row with a test (`adjust="holm"`, the default) or `p_value` itself
    (`adjust="none"`)."""

    task: str | None
    spec: str
    before: float | None
    after: float | None
    delta: float | None
    change: str
    n_before: int = 0
    passed_before: int = 0
    n_after: int = 0
    passed_after: int = 0
    # Wilson score intervals at 1 - alpha, [low, high]; None when that side scored nothing.
    before_interval: tuple[float, float] | None = None
    after_interval: tuple[float, float] | None = None
    # pass@k and pass^k on both sides with one k (by default the smaller side's rollouts).
    k: int | None = None
    pass_at_k_before: float | None = None
    pass_at_k_after: float | None = None
    pass_hat_k_before: float | None = None
    pass_hat_k_after: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    significant: bool = False

    @property
    def significant_regression(self) -> bool:
        return self.significant and self.change == "regressed"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("before_interval", "after_interval"):
            data[key] = list(data[key]) if data[key] is not None else None
        return data


def load_results(path: Path) -> list[TaskResult]:
    """Task results from a `score --format json` (verdicts) or `report --format json` file."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DiffError(f"{path}: cannot read a scoring result: {exc}") from exc
    if not isinstance(data, list):
        raise DiffError(f"{path}: expected the JSON array printed by `tracescore score/report --format json`")
    if data and "run_id" in data[0]:
        try:
            return aggregate(verdict_from_dict(item) for item in data)
        except TypeError as exc:
            raise DiffError(f"{path}: verdicts are missing fields: {exc}") from exc
    try:
        return [TaskResult(**item) for item in data]
    except TypeError as exc:
        raise DiffError(f"{path}: not a list of verdicts or task results: {exc}") from exc


def _interval(result: TaskResult | None, confidence: float) -> tuple[float, float] | None:
    if result is None:
        return None
    interval = wilson_interval(result.n_passed, result.n_scored, confidence)
    return None if interval is None else (interval.low, interval.high)


def _delta(
    key: tuple[str | None, str],
    old: TaskResult | None,
    new: TaskResult | None,
    *,
    alpha: float,
    k: int | None,
) -> TaskDelta:
    a = old.pass_rate if old is not None else None
    b = new.pass_rate if new is not None else None
    delta: float | None = None
    if old is None:
        change = "new"
    elif new is None:
        change = "gone"
    elif a is None or b is None:
        change = "unscored"
    else:
        delta = b - a
        change = "unchanged" if abs(delta) <= _UNCHANGED else ("improved" if delta > 0 else "regressed")
    n_a, c_a = (old.n_scored, old.n_passed) if old is not None else (0, 0)
    n_b, c_b = (new.n_scored, new.n_passed) if new is not None else (0, 0)
    p_value = fisher_exact(c_a, n_a, c_b, n_b) if n_a and n_b else None
    common_k = k if k is not None else (min(n_a, n_b) or None)
    return TaskDelta(
        key[0],
        key[1],
        a,
        b,
        delta,
        change,
        n_before=n_a,
        passed_before=c_a,
        n_after=n_b,
        passed_after=c_b,
        before_interval=_interval(old, 1 - alpha),
        after_interval=_interval(new, 1 - alpha),
        k=common_k,
        pass_at_k_before=pass_at_k(n_a, c_a, common_k) if old is not None and common_k else None,
        pass_at_k_after=pass_at_k(n_b, c_b, common_k) if new is not None and common_k else None,
        pass_hat_k_before=pass_hat_k(n_a, c_a, common_k) if old is not None and common_k else None,
        pass_hat_k_after=pass_hat_k(n_b, c_b, common_k) if new is not None and common_k else None,
        p_value=p_value,
    )


def diff(
    before: list[TaskResult],
    after: list[TaskResult],
    *,
    allow_spec_change: bool = False,
    alpha: float = DEFAULT_ALPHA,
    k: int | None = None,
    adjust: str = "holm",
) -> list[TaskDelta]:
    """One `TaskDelta` per task and spec on either side, sorted by task then spec."""
    if adjust not in ADJUSTMENTS:
        raise DiffError(f"adjust {adjust!r}: expected one of {', '.join(ADJUSTMENTS)}")
    if not 0 < alpha < 1:
        raise DiffError(f"alpha must be between 0 and 1, got {alpha}")
    if k is not None and k < 1:
        raise DiffError(f"k must be 1 or more, got {k}")
    prints_before = {r.spec: r.spec_fingerprint for r in before}
    prints_after = {r.spec: r.spec_fingerprint for r in after}
    changed = sorted(
        s for s in prints_before.keys() & prints_after.keys() if prints_before[s] != prints_after[s]
    )
    if changed and not allow_spec_change:
        raise DiffError(
            f"spec(s) changed between the two results ({', '.join(changed)}): their fingerprints differ, so "
            "pass rates are not comparable; pass --allow-spec-change to compare anyway"
        )
    old = {(r.task, r.spec): r for r in before}
    new = {(r.task, r.spec): r for r in after}
    deltas = [
        _delta(key, old.get(key), new.get(key), alpha=alpha, k=k)
        for key in sorted(old.keys() | new.keys(), key=lambda item: (item[0] or "", item[1]))
    ]
    tested = [i for i, d in enumerate(deltas) if d.p_value is not None]
    raw = [deltas[i].p_value or 0.0 for i in tested]
    adjusted = holm_adjusted(raw) if adjust == "holm" else raw
    for i, p in zip(tested, adjusted, strict=True):
        deltas[i] = replace(deltas[i], p_adjusted=p, significant=p <= alpha)
    return deltas


# What fails a CI gate (`--fail-on`): a regression the exact test calls significant, any lower pass rate
# (`diff`'s behaviour before the test existed, still its default), or nothing.
FAIL_ON = ("regression", "any-regression", "never")


def gate_fails(deltas: list[TaskDelta], fail_on: str) -> bool:
    if fail_on == "regression":
        return any(d.significant_regression for d in deltas)
    if fail_on == "any-regression":
        return any(d.change == "regressed" for d in deltas)
    if fail_on == "never":
        return False
    raise DiffError(f"--fail-on {fail_on!r}: expected one of {', '.join(FAIL_ON)}")

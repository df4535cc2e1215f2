"""Per-task statistics over the k rollouts (runs) of a task.

pass@k (Chen et al. 2021): 1 − C(n−c, k)/C(n, k), the chance that at least one of k rollouts passes.
pass^k (τ-bench, arXiv 2406.12045): C(c, k)/C(n, k), the chance that all k pass. Both are the
unbiased estimators from n scored rollouts with c passes; undefined (None) when n < k.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from math import comb
from statistics import mean
from typing import Any

from scoring.checks.latency_history import DETAIL_KEY, evaluate
from scoring.verdict.record import Verdict


def pass_at_k(n: int, c: int, k: int) -> float | None:
    if k < 1 or n < k:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    if k < 1 or n < k:
        return None
    return comb(c, k) / comb(n, k)


@dataclass(frozen=True, slots=True)
class TaskResult:
    task: str | None
    spec: str
    spec_fingerprint: str
    n_runs: int
    n_scored: int
    n_passed: int
    n_errors: int
    pass_rate: float | None
    mean_value: float | None
    k: int
    pass_at_k: float | None
    pass_hat_k: float | None
    in_learning_zone: bool
    # Latency percentiles over the task's runs (spec `latency: {p95_ms: …}`): one entry per tool,
    # percentile and window; `latency_passed` is None when the spec sets no percentile or none applied.
    latency: list[dict[str, Any]] = field(default_factory=list)
    latency_passed: bool | None = None
    # What the task's tools took, whatever the spec bounds: nearest-rank `{n, p50_ms, p95_ms, p99_ms}`
    # of every clean execution in the task's runs, read from the stored executions by the report
    # (scoring/report/build.py); None where only verdicts were at hand, `n` 0 when none was timed.
    execution_latency: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def aggregate(verdicts: Iterable[Verdict], k: int | None = None) -> list[TaskResult]:
    """One row per (task, spec). Error verdicts are unscored, never failures. `k` defaults to the
    task's own number of scored rollouts."""
    groups: dict[tuple[str | None, str], list[Verdict]] = {}
    for verdict in verdicts:
        groups.setdefault((verdict.task, verdict.spec), []).append(verdict)
    results = []
    for (task, spec), group in sorted(groups.items(), key=lambda item: (item[0][0] or "", item[0][1])):
        scored = [v for v in group if v.label != "error"]
        n, c = len(scored), sum(1 for v in scored if v.passed)
        values = [v.value for v in scored if v.value is not None]
        task_k = k if k is not None else max(n, 1)
        latency = evaluate(v.detail[DETAIL_KEY] for v in scored if DETAIL_KEY in v.detail)
        results.append(
            TaskResult(
                task=task,
                spec=spec,
                spec_fingerprint=group[0].spec_fingerprint,
                n_runs=len(group),
                n_scored=n,
                n_passed=c,
                n_errors=len(group) - n,
                pass_rate=c / n if n else None,
                mean_value=mean(values) if values else None,
                k=task_k,
                pass_at_k=pass_at_k(n, c, task_k),
                pass_hat_k=pass_hat_k(n, c, task_k),
                in_learning_zone=0 < c < n,
                latency=latency,
                latency_passed=all(r["satisfied"] for r in latency) if latency else None,
            )
        )
    return results

"""`tracescore diff`: per task, the pass rate before and after, from two saved scoring results.

Results are comparable only when each spec has the same fingerprint on both sides: otherwise a changed
spec, not a changed agent, may explain the difference.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scoring.report.aggregate import TaskResult, aggregate
from scoring.verdict.record import verdict_from_dict

_UNCHANGED = 1e-9


class DiffError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class TaskDelta:
    task: str | None
    spec: str
    before: float | None
    after: float | None
    delta: float | None
    change: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def diff(
    before: list[TaskResult], after: list[TaskResult], *, allow_spec_change: bool = False
) -> list[TaskDelta]:
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
    deltas = []
    for key in sorted(old.keys() | new.keys(), key=lambda k: (k[0] or "", k[1])):
        a = old[key].pass_rate if key in old else None
        b = new[key].pass_rate if key in new else None
        if key not in old:
            change, delta = "new", None
        elif key not in new:
            change, delta = "gone", None
        elif a is None or b is None:
            change, delta = "unscored", None
        else:
            delta = b - a
            change = "unchanged" if abs(delta) <= _UNCHANGED else ("improved" if delta > 0 else "regressed")
        deltas.append(TaskDelta(key[0], key[1], a, b, delta, change))
    return deltas

"""Rollout statistics (issue 4 "Verdicts, storage, rollouts"): pass@k, pass^k, the learning zone
(agno E3), unscored error verdicts, and `scoring.diff` of two scoring results."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from scoring import DiffError, TaskResult, Verdict, aggregate, diff, load_results, pass_at_k, pass_hat_k
from scoring.verdict.record import error_verdict


def verdict(
    passed: bool,
    *,
    value: float | None = None,
    task: str | None = "t1",
    spec: str = "s",
    fingerprint: str = "fp",
    run: str = "r",
) -> Verdict:
    return Verdict(
        run_id=run,
        trace_id="trace",
        task=task,
        spec=spec,
        spec_fingerprint=fingerprint,
        profile="default",
        passed=passed,
        value=(1.0 if passed else 0.0) if value is None else value,
        label="pass" if passed else "fail",
        checks=(),
        missing_tools=(),
        additional_tools=(),
        failed_argument_checks=(),
        latency_violations=(),
        reason=None,
        run_version=1,
    )


def error(task: str | None = "t1", spec: str = "s") -> Verdict:
    return error_verdict("r", "trace", task, spec, "fp", "default", 1, "boom")


def rollouts(n: int, c: int, task: str = "t1", fingerprint: str = "fp") -> list[Verdict]:
    return [verdict(i < c, task=task, fingerprint=fingerprint, run=f"{task}-{i}") for i in range(n)]


# --- estimators --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "k", "at_k", "hat_k"),
    [
        (5, 2, 2, 1 - 3 / 10, 1 / 10),  # 1 - C(3,2)/C(5,2); C(2,2)/C(5,2)
        (5, 2, 1, 2 / 5, 2 / 5),  # k = 1: both are the pass rate
        (5, 3, 2, 1 - 1 / 10, 3 / 10),  # 1 - C(2,2)/C(5,2); C(3,2)/C(5,2)
        (10, 4, 3, 1 - 20 / 120, 4 / 120),  # 1 - C(6,3)/C(10,3); C(4,3)/C(10,3)
        (4, 3, 4, 1.0, 0.0),  # n - c < k: some rollout of any k passes; c < k: never all
        (3, 3, 3, 1.0, 1.0),
        (3, 0, 2, 0.0, 0.0),
        (2, 2, 2, 1.0, 1.0),
    ],
)
def test_pass_at_k_and_pass_hat_k(n: int, c: int, k: int, at_k: float, hat_k: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(at_k)
    assert pass_hat_k(n, c, k) == pytest.approx(hat_k)


@pytest.mark.parametrize(("n", "c", "k"), [(1, 1, 2), (0, 0, 1), (4, 2, 5), (3, 1, 0)])
def test_undefined_when_fewer_rollouts_than_k(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) is None
    assert pass_hat_k(n, c, k) is None


def test_aggregate_uses_the_configured_k() -> None:
    [row] = aggregate(rollouts(5, 2), k=2)
    assert (row.n_scored, row.n_passed, row.k) == (5, 2, 2)
    assert row.pass_at_k == pytest.approx(0.7)
    assert row.pass_hat_k == pytest.approx(0.1)
    assert row.pass_rate == pytest.approx(0.4)
    assert row.mean_value == pytest.approx(0.4)


def test_aggregate_k_defaults_to_the_tasks_scored_rollouts() -> None:
    [row] = aggregate(rollouts(3, 2))
    assert (row.k, row.pass_at_k, row.pass_hat_k) == (3, 1.0, 0.0)


def test_aggregate_with_more_k_than_rollouts_gives_none() -> None:
    [row] = aggregate(rollouts(2, 1), k=3)
    assert (row.pass_at_k, row.pass_hat_k) == (None, None)
    assert row.pass_rate == 0.5


# --- learning zone (agno E3) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "unscored", "in_zone"),
    [
        ([0.0, 1.0], 0, True),
        ([1.0, 1.0], 0, False),
        ([0.0, 0.0], 0, False),
        ([0.4, 0.9], 0, True),
        ([0.6, 0.8, 1.0], 0, False),
        ([0.1, 0.3], 0, False),
        ([1.0], 0, False),
        ([0.0], 0, False),
        ([], 2, False),
        ([0.4, 0.9], 3, True),
        ([1.0], 4, False),
    ],
)
def test_learning_zone_table(values: list[float], unscored: int, in_zone: bool) -> None:
    verdicts = [verdict(v >= 0.5, value=v) for v in values] + [error() for _ in range(unscored)]
    [row] = aggregate(verdicts)
    assert row.in_learning_zone is in_zone
    assert (row.n_scored, row.n_errors, row.n_runs) == (len(values), unscored, len(values) + unscored)
    assert row.n_passed == sum(1 for v in values if v >= 0.5)
    if values:
        assert row.pass_rate == pytest.approx(row.n_passed / len(values))
        assert row.mean_value == pytest.approx(sum(values) / len(values))
    else:
        assert (row.pass_rate, row.mean_value, row.pass_at_k, row.pass_hat_k) == (None, None, None, None)


def test_error_verdicts_are_unscored_never_failures() -> None:
    [row] = aggregate([verdict(True), error(), error()], k=1)
    assert (row.n_runs, row.n_scored, row.n_passed, row.n_errors) == (3, 1, 1, 2)
    assert (row.pass_rate, row.mean_value, row.pass_at_k, row.pass_hat_k) == (1.0, 1.0, 1.0, 1.0)
    assert row.in_learning_zone is False


def test_verdicts_without_a_value_leave_mean_value_empty() -> None:
    no_value = [replace(verdict(True), value=None), replace(verdict(False), value=None)]
    [row] = aggregate(no_value)
    assert (row.pass_rate, row.mean_value, row.in_learning_zone) == (0.5, None, True)


def test_one_row_per_task_and_spec() -> None:
    verdicts = [
        verdict(True, task="b"),
        verdict(False, task="a"),
        verdict(True, task="a", spec="other"),
        verdict(True, task=None),
    ]
    rows = aggregate(verdicts)
    assert [(r.task, r.spec, r.n_scored) for r in rows] == [
        (None, "s", 1),
        ("a", "other", 1),
        ("a", "s", 1),
        ("b", "s", 1),
    ]


# --- diff ----------------------------------------------------------------------------------------------


def test_diff_classifies_each_task() -> None:
    before = aggregate(
        rollouts(4, 1, "up") + rollouts(4, 3, "down") + rollouts(4, 2, "same") + rollouts(2, 2, "gone")
    )
    after = aggregate(
        rollouts(4, 3, "up") + rollouts(4, 1, "down") + rollouts(2, 1, "same") + rollouts(2, 0, "new")
    )
    rows = {d.task: d for d in diff(before, after)}
    assert set(rows) == {"up", "down", "same", "gone", "new"}
    assert (rows["up"].before, rows["up"].after, rows["up"].change) == (0.25, 0.75, "improved")
    assert rows["up"].delta == pytest.approx(0.5)
    assert rows["down"].change == "regressed"
    assert rows["down"].delta == pytest.approx(-0.5)
    assert (rows["same"].change, rows["same"].delta) == ("unchanged", 0.0)
    assert (rows["gone"].before, rows["gone"].after, rows["gone"].change) == (1.0, None, "gone")
    assert (rows["new"].before, rows["new"].after, rows["new"].change) == (None, 0.0, "new")


def test_diff_treats_rounding_noise_as_unchanged_and_unscored_as_such() -> None:
    [row] = aggregate(rollouts(3, 1))
    [noisy] = diff([row], [replace(row, pass_rate=1 / 3 + 1e-12)])
    assert noisy.change == "unchanged"
    [unscored] = diff([row], [replace(row, pass_rate=None)])
    assert (unscored.change, unscored.delta) == ("unscored", None)


def test_diff_refuses_a_changed_spec_fingerprint() -> None:
    before = aggregate(rollouts(2, 1, fingerprint="old"))
    after = aggregate(rollouts(2, 2, fingerprint="new"))
    with pytest.raises(DiffError, match=r"spec\(s\) changed between the two results \(s\)") as caught:
        diff(before, after)
    assert "--allow-spec-change" in str(caught.value)
    [row] = diff(before, after, allow_spec_change=True)
    assert (row.before, row.after, row.change) == (0.5, 1.0, "improved")


def test_diff_of_a_spec_on_one_side_only_is_not_a_fingerprint_change() -> None:
    before = aggregate([verdict(True, spec="a", fingerprint="x")])
    after = aggregate([verdict(True, spec="b", fingerprint="y")])
    assert [(d.spec, d.change) for d in diff(before, after)] == [("a", "gone"), ("b", "new")]


def test_results_load_from_verdict_and_report_json(tmp_path: Path) -> None:
    verdicts = rollouts(4, 1)
    scored = tmp_path / "score.json"
    scored.write_text(json.dumps([v.to_dict() for v in verdicts]))
    reported = tmp_path / "report.json"
    reported.write_text(json.dumps([r.to_dict() for r in aggregate(verdicts)]))
    from_verdicts: list[TaskResult] = load_results(scored)
    assert from_verdicts == load_results(reported) == aggregate(verdicts)
    broken = tmp_path / "broken.json"
    broken.write_text('{"not": "a list"}')
    with pytest.raises(DiffError, match="expected the JSON array"):
        load_results(broken)

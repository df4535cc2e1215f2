"""`tracescore diff` says whether a change is more than noise (issue 28, item 3): each side's pass rate
with its Wilson interval, Fisher's exact test, pass@k and pass^k with one k, column headers, and
`--fail-on regression` that fails only a significant regression."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collector.cli._main import main
from scoring import aggregate, diff
from scoring.report.stats import fisher_exact, holm_adjusted, wilson_interval
from tests.scoring.report.test_aggregate import rollouts


def test_the_same_rates_on_4_and_on_400_rollouts_are_different_claims() -> None:
    [few] = diff(aggregate(rollouts(4, 1)), aggregate(rollouts(4, 3)))
    [many] = diff(aggregate(rollouts(400, 100)), aggregate(rollouts(400, 300)))
    assert (
        (few.before, few.after, few.change)
        == (many.before, many.after, many.change)
        == (0.25, 0.75, "improved")
    )
    assert few.p_value == pytest.approx(0.4857142857142857)  # 17/35: two-sided Fisher on [[1, 3], [3, 1]]
    assert not few.significant
    assert many.p_value is not None and many.p_value < 1e-30 and many.significant


def test_each_side_carries_its_counts_interval_and_pass_at_k_with_one_k() -> None:
    [row] = diff(aggregate(rollouts(50, 45)), aggregate(rollouts(40, 24)), alpha=0.1)
    assert (row.n_before, row.passed_before, row.n_after, row.passed_after) == (50, 45, 40, 24)
    before, after = wilson_interval(45, 50, 0.9), wilson_interval(24, 40, 0.9)
    assert before is not None and after is not None
    assert row.before_interval == (before.low, before.high)
    assert row.after_interval == (after.low, after.high)
    assert row.p_value == fisher_exact(45, 50, 24, 40)
    assert row.k == 40  # the smaller side's rollouts: pass^k on 50 and on 40 would not compare
    assert row.pass_hat_k_before is not None and row.pass_hat_k_after == 0.0
    [three] = diff(aggregate(rollouts(50, 45)), aggregate(rollouts(40, 24)), k=3)
    assert three.k == 3 and three.pass_at_k_before == pytest.approx(1 - (5 * 4 * 3) / (50 * 49 * 48))


def test_a_side_with_no_scored_run_has_no_test() -> None:
    [new] = diff([], aggregate(rollouts(5, 5)))
    assert (new.change, new.p_value, new.significant, new.before_interval) == ("new", None, False, None)


def _write(path: Path, n: int, c: int) -> Path:
    path.write_text(json.dumps([v.to_dict() for v in rollouts(n, c, task="same-day-dispatch")]))
    return path


def test_the_diff_table_has_column_headers_and_a_legend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = _write(tmp_path / "before.json", 4, 1), _write(tmp_path / "after.json", 8, 5)
    assert main(["diff", str(before), str(after)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "TASK", "SPEC", "BEFORE", "PASSED", "95%", "CI", "AFTER", "PASSED", "95%", "CI", "DELTA", "P", "P",
        "ADJ", "K", "PASS@K", "PASS^K", "CHANGE",
    ]  # fmt: skip
    assert set(lines[1].replace(" ", "")) == {"-"}
    row = lines[2].split()
    assert row[:4] == ["same-day-dispatch", "s", "0.25", "1/4"]
    assert "improved (not significant)" in lines[2]
    assert any("Fisher's exact test" in line for line in lines[3:])


@pytest.mark.parametrize(
    ("fail_on", "n", "expected"),
    [
        ("any-regression", 4, 1),  # the default, as before: any lower rate fails
        ("regression", 4, 0),  # 3/4 -> 1/4 is not significant
        ("regression", 40, 1),  # 30/40 -> 10/40 is
        ("never", 40, 0),
    ],
)
def test_fail_on_regression_fails_only_a_significant_regression(
    tmp_path: Path, fail_on: str, n: int, expected: int
) -> None:
    before, after = (
        _write(tmp_path / "before.json", n, n * 3 // 4),
        _write(tmp_path / "after.json", n, n // 4),
    )
    assert main(["diff", str(before), str(after), "--fail-on", fail_on]) == expected


def test_diff_json_rows_carry_the_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = _write(tmp_path / "before.json", 40, 30), _write(tmp_path / "after.json", 40, 10)
    assert main(["diff", str(before), str(after), "--format", "json", "--alpha", "0.01"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["change"] == "regressed" and row["significant"] is True
    assert row["p_value"] == pytest.approx(fisher_exact(30, 40, 10, 40))
    low, high = row["before_interval"]
    interval = wilson_interval(30, 40, 0.99)
    assert interval is not None and (low, high) == (interval.low, interval.high)


def test_holm_adjusts_the_p_values_of_many_pairs() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 -> 4 x 0.005, 3 x 0.01, max(0.03, 2 x 0.03), max(0.06, 1 x 0.04)
    assert holm_adjusted([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjusted([]) == []
    assert holm_adjusted([0.7, 0.9]) == [1.0, 1.0]


def test_with_many_pairs_a_lone_small_p_value_is_no_longer_significant() -> None:
    """20 tasks with no real change and one p-value just under alpha by chance: unadjusted, that one
    fails the gate; adjusted by Holm, none does, while a real drop still does."""
    before = aggregate(
        [v for t in range(20) for v in rollouts(12, 6, task=f"t{t:02}")] + rollouts(12, 9, "drop")
    )
    after = aggregate(
        [v for t in range(20) for v in rollouts(12, 6, task=f"t{t:02}")] + rollouts(12, 3, "drop")
    )
    raw = {d.task: d for d in diff(before, after, adjust="none")}
    held = {d.task: d for d in diff(before, after)}
    assert raw["drop"].p_value == pytest.approx(fisher_exact(9, 12, 3, 12))
    assert 0.01 < raw["drop"].p_value < 0.05 and raw["drop"].significant  # type: ignore[operator]
    assert held["drop"].p_adjusted == pytest.approx(min(1.0, 21 * raw["drop"].p_value))  # type: ignore[operator]
    assert not held["drop"].significant
    big_before = aggregate(rollouts(60, 50, "real") + rollouts(12, 6, "t"))
    big_after = aggregate(rollouts(60, 20, "real") + rollouts(12, 6, "t"))
    assert {d.task: d.significant for d in diff(big_before, big_after)} == {"real": True, "t": False}

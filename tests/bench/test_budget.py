"""The memory step's budget run (bench/budget.py): a server that does not even start is a miss in the
server's own words, never a figure it did not measure; and the smallest budget the documentation
states is the one the bench measures and tests/collector/serve/test_smallest_budget.py runs."""

from __future__ import annotations

from pathlib import Path

from bench.budget import SMALL_BUDGET, as_target, budget_run


def test_a_server_that_does_not_start_is_a_miss_in_its_own_words() -> None:
    run = budget_run("lots", 1000, seconds=1)
    assert run["started"] is False
    problems = as_target(run).problems()
    assert len(problems) == 1
    assert problems[0].startswith("the server did not start: server exited with ")
    assert "'lots' is not a size" in problems[0]
    assert "Traceback" not in problems[0]


def test_the_documented_smallest_budget_is_the_one_measured_and_tested() -> None:
    reliability = (Path(__file__).parents[2] / "docs" / "reliability.md").read_text()
    assert f"`--memory-limit {SMALL_BUDGET}` (`SMALL_BUDGET` in `bench/budget.py`)" in " ".join(
        reliability.split()
    )

"""The memory step's budget run (bench/budget.py) when the server does not even start: the row says so
in the server's own words, never a figure it did not measure."""

from __future__ import annotations

from bench.budget import as_target, budget_run


def test_a_server_that_does_not_start_is_a_miss_in_its_own_words() -> None:
    run = budget_run("lots", 1000, seconds=1)
    assert run["started"] is False
    problems = as_target(run).problems()
    assert len(problems) == 1
    assert problems[0].startswith("the server did not start: server exited with ")
    assert "'lots' is not a size" in problems[0]
    assert "Traceback" not in problems[0]

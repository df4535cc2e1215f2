"""Verdict counts for /metrics: a series per (spec, task) up to the cap, then one overflow task per spec."""

from __future__ import annotations

from collector.serve._verdict_counts import LABELS, OVERFLOW_TASK, VerdictCounts


def test_a_pair_has_every_label_from_its_first_verdict_on() -> None:
    counts = VerdictCounts()
    counts.count("cutoff", "shop", "pass")
    counts.count("cutoff", None, "error")
    assert counts.items() == [
        (("cutoff", "", "error"), 1),
        (("cutoff", "", "fail"), 0),
        (("cutoff", "", "pass"), 0),
        (("cutoff", "shop", "error"), 0),
        (("cutoff", "shop", "fail"), 0),
        (("cutoff", "shop", "pass"), 1),
    ]


def test_tasks_past_the_cap_count_under_the_overflow_task_of_their_spec() -> None:
    counts = VerdictCounts(max_pairs=3)
    for task in ("t1", "t2", "t3"):
        counts.count("a", task, "pass")
    for i in range(100):  # a flood of new task ids: no new series past the cap
        counts.count("a", f"new-{i}", "fail")
        counts.count("b", f"new-{i}", "pass")
    counts.count("a", "t1", "fail")  # a pair seen before the cap keeps its own series
    series = dict(counts.items())
    assert len(series) == len(LABELS) * (3 + 2)  # the cap, and one overflow pair for each spec
    assert series[("a", "t1", "fail")] == 1
    assert series[("a", OVERFLOW_TASK, "fail")] == 100 and series[("b", OVERFLOW_TASK, "pass")] == 100
    # A spec's totals stay exact.
    assert sum(n for (spec, _, _), n in series.items() if spec == "a") == 3 + 100 + 1

"""The `tracescore_rollouts` marker: a test run k times, its pass rate, pass@k or pass^k asserted."""

from __future__ import annotations

import pytest

from tests.collector.testing._plugin import run

FLAKY = """
import itertools

import pytest
from opentelemetry import trace

from tests.collector.testing._agent import SPEC_YAML, weather_agent

CITIES = itertools.cycle(["Paris", "Rome", "Paris"])  # one attempt in three asks for the wrong city


def flaky(tracescore):
    weather_agent(trace.get_tracer("agent"), [("get_weather", {"city": next(CITIES)})])
    (run,) = tracescore.runs()  # each attempt sees its own run only
    tracescore.assert_run(SPEC_YAML)


@pytest.mark.tracescore_rollouts(k=3, pass_rate=0.6)
def test_two_in_three_meets_a_rate_of_0_6(tracescore):
    flaky(tracescore)


@pytest.mark.tracescore_rollouts(k=3, pass_hat_k=0.5)
def test_two_in_three_is_not_pass_hat_3(tracescore):
    flaky(tracescore)


@pytest.mark.tracescore_rollouts(n=3, k=2, pass_at_k=1.0)
def test_two_in_three_is_pass_at_2(tracescore):
    flaky(tracescore)


@pytest.mark.tracescore_rollouts(n=3, k=2, pass_hat_k=0.34)
def test_pass_hat_2_of_two_in_three_is_a_third(tracescore):
    flaky(tracescore)


@pytest.mark.tracescore_rollouts(k=2)
def test_a_marker_without_a_figure_is_refused(tracescore):
    flaky(tracescore)
"""


def test_rollouts_assert_the_figures_over_their_attempts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_flaky=FLAKY)
    result = run(pytester, "-q", "-rA")
    summary = [line.split(" ", 1) for line in result.stdout.lines if line.startswith(("PASSED ", "FAILED "))]
    outcomes = {test.split("::")[1].split(" ")[0]: outcome.lower() for outcome, test in summary}
    assert outcomes == {
        "test_two_in_three_meets_a_rate_of_0_6": "passed",
        "test_two_in_three_is_not_pass_hat_3": "failed",
        "test_two_in_three_is_pass_at_2": "passed",
        "test_pass_hat_2_of_two_in_three_is_a_third": "failed",
        "test_a_marker_without_a_figure_is_refused": "failed",
    }
    result.stdout.fnmatch_lines(
        [
            "*tracescore_rollouts: 2 of 3 attempts passed: pass^3 0.00 is below 0.50*",
            "*attempt 2 failed with: tracescore: 1 of 1 verdict(s) did not pass; spec 'weather': no clean*",
            "*tracescore_rollouts: 2 of 3 attempts passed: pass^2 0.33 is below 0.34*",
            "*tracescore_rollouts: needs k >= 1, n >= k and at least one of pass_rate, pass_at_k, pass_hat_k",
        ]
    )

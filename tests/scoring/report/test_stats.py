"""The comparison statistics (scoring/report/stats.py) against a reference: SciPy's Fisher's exact test
and the Wilson interval by its formula with SciPy's normal quantile, and Newcombe's published values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import fisher_exact as scipy_fisher_exact
from scipy.stats import norm

from scoring.report.stats import EXACT_UP_TO, fisher_exact, wilson_interval, z_for


def _scipy_p(passed_a: int, n_a: int, passed_b: int, n_b: int) -> float:
    return float(scipy_fisher_exact([[passed_a, n_a - passed_a], [passed_b, n_b - passed_b]]).pvalue)


@st.composite
def _tables(draw: st.DrawFn, most: int) -> tuple[int, int, int, int]:
    n_a = draw(st.integers(1, most))
    n_b = draw(st.integers(1, most))
    return draw(st.integers(0, n_a)), n_a, draw(st.integers(0, n_b)), n_b


@settings(max_examples=200, deadline=None)
@given(_tables(80))
def test_fisher_exact_equals_scipy_on_small_tables(table: tuple[int, int, int, int]) -> None:
    assert fisher_exact(*table) == pytest.approx(_scipy_p(*table), rel=1e-9, abs=1e-15)


@settings(max_examples=25, deadline=None)
@given(_tables(30_000))
def test_fisher_exact_equals_scipy_in_log_space_on_large_tables(table: tuple[int, int, int, int]) -> None:
    assert fisher_exact(*table) == pytest.approx(_scipy_p(*table), rel=1e-6, abs=1e-12)


@pytest.mark.parametrize(
    "table",
    [
        (45, 50, 30, 50),  # the 0.9 against 0.6 on 50 rollouts each
        (1, 4, 3, 4),  # 0.25 against 0.75 on 4 rollouts: not significant
        (100, 400, 250, 400),  # the same kind of change on 400: overwhelming
        (0, 10, 10, 10),
        (5, 5, 5, 5),
        (7, 12, 5, 12),  # symmetric margins: tables exactly as likely as the observed one count
    ],
)
def test_fisher_exact_on_tables_worth_naming(table: tuple[int, int, int, int]) -> None:
    assert fisher_exact(*table) == pytest.approx(_scipy_p(*table), rel=1e-12)


def test_the_exact_and_the_log_space_paths_agree_at_their_border() -> None:
    n = EXACT_UP_TO // 2
    exact = fisher_exact(n * 9 // 10, n, n * 85 // 100, n)
    assert exact == pytest.approx(_scipy_p(n * 9 // 10, n, n * 85 // 100, n), rel=1e-9)
    beyond = fisher_exact(n * 9 // 10 + 1, n + 1, n * 85 // 100, n)
    assert beyond == pytest.approx(_scipy_p(n * 9 // 10 + 1, n + 1, n * 85 // 100, n), rel=1e-6)


def test_an_empty_group_or_a_single_outcome_is_no_evidence_of_a_difference() -> None:
    assert fisher_exact(0, 0, 3, 5) == 1.0
    assert fisher_exact(5, 5, 9, 9) == 1.0
    with pytest.raises(ValueError):
        fisher_exact(6, 5, 1, 5)


def _wilson_reference(passed: int, n: int, confidence: float) -> tuple[float, float]:
    z = float(norm.ppf(0.5 + confidence / 2))
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("passed,n", [(0, 1), (1, 1), (0, 10), (3, 4), (45, 50), (30, 50), (999, 1000)])
def test_wilson_interval_is_the_formula_with_scipys_normal_quantile(
    passed: int, n: int, confidence: float
) -> None:
    interval = wilson_interval(passed, n, confidence)
    assert interval is not None
    low, high = _wilson_reference(passed, n, confidence)
    assert interval.low == pytest.approx(max(0.0, low), abs=1e-12)
    assert interval.high == pytest.approx(min(1.0, high), abs=1e-12)
    assert z_for(confidence) == pytest.approx(float(norm.ppf(0.5 + confidence / 2)), rel=1e-12)


@pytest.mark.parametrize(
    "passed,n,low,high",
    # Newcombe, R. G. (1998), "Two-sided confidence intervals for the single proportion: comparison of
    # seven methods", Statistics in Medicine 17:857-872, Table II, method 3 (Wilson score, no correction).
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)],
)
def test_wilson_interval_matches_newcombes_published_values(
    passed: int, n: int, low: float, high: float
) -> None:
    interval = wilson_interval(passed, n)
    assert interval is not None
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


def test_wilson_interval_stays_in_bounds_and_is_none_without_runs() -> None:
    assert wilson_interval(0, 0) is None
    everything = wilson_interval(5, 5)
    nothing = wilson_interval(0, 5)
    assert everything is not None and everything.high == 1.0 and everything.low < 1.0
    assert nothing is not None and nothing.low == 0.0 and nothing.high > 0.0

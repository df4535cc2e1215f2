"""The statistics of comparing two pass rates: a confidence interval for each, and an exact test of
whether they differ. Pure Python, no SciPy (tests hold both to SciPy's).

- Wilson score interval (Wilson, E. B. 1927, "Probable inference, the law of succession, and
  statistical inference", JASA 22(158):209-212): stays inside [0, 1] and keeps its coverage at the
  small counts and extreme rates agent rollouts have, where the textbook p ± z·√(p(1−p)/n) collapses
  to [1, 1] after 5 passes of 5.
- Fisher's exact test, two-sided (Fisher, R. A. 1922, "On the interpretation of χ² from contingency
  tables, and the calculation of P", JRSS 85(1):87-94; Agresti, A. 1992, "A survey of exact inference
  for contingency tables", Statistical Science 7(1):131-153): with both groups' sizes and the total of
  passes held fixed, the passes of the first group follow a hypergeometric law; the p-value is the
  probability of every table no more likely than the one observed (the rule R's `fisher.test` and
  SciPy's `fisher_exact` use). It is exact at any count, which a χ² or z test is not at 5 rollouts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

# Up to this many runs in the two groups together, the hypergeometric terms are exact integers (a
# Fraction for the p-value): a few milliseconds. Beyond, log-space with SciPy's relative tolerance.
EXACT_UP_TO = 4_000
_RELATIVE_TOLERANCE = 1e-7  # as SciPy and R: a table within this of the observed one counts as as likely


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float


def z_for(confidence: float) -> float:
    """The two-sided standard normal quantile: 1.959963984540054 for 0.95."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(passed: int, n: int, confidence: float = 0.95) -> Interval | None:
    """The Wilson score interval of `passed`/`n`; None when nothing was scored."""
    if n < 0 or not 0 <= passed <= n:
        raise ValueError(f"expected 0 <= passed <= n, got {passed}/{n}")
    if n == 0:
        return None
    z = z_for(confidence)
    p = passed / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    # At 0 and n passes one bound is exactly 0 or 1; rounding must not move it past.
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == n else min(1.0, centre + half)
    return Interval(low, high)


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_exact(passed_a: int, n_a: int, passed_b: int, n_b: int) -> float:
    """Two-sided p-value of Fisher's exact test on the 2×2 table [[passed_a, n_a − passed_a], [passed_b,
    n_b − passed_b]]: 1.0 when either group is empty (nothing to compare)."""
    for passed, n in ((passed_a, n_a), (passed_b, n_b)):
        if n < 0 or not 0 <= passed <= n:
            raise ValueError(f"expected 0 <= passed <= n, got {passed}/{n}")
    total, passes = n_a + n_b, passed_a + passed_b
    if n_a == 0 or n_b == 0 or passes in (0, total):
        return 1.0
    # x = passes in group a: from max(0, passes − n_b) to min(passes, n_a).
    low, high = max(0, passes - n_b), min(passes, n_a)
    if total <= EXACT_UP_TO:
        # P(x) = C(n_a, x)·C(n_b, passes − x) / C(total, passes): compared as exact integers.
        weights = [math.comb(n_a, x) * math.comb(n_b, passes - x) for x in range(low, high + 1)]
        observed = weights[passed_a - low]
        tail = sum(w for w in weights if w <= observed)
        return float(min(Fraction(tail, math.comb(total, passes)), Fraction(1)))
    logs = [_log_comb(n_a, x) + _log_comb(n_b, passes - x) for x in range(low, high + 1)]
    denominator = _log_comb(total, passes)
    bound = logs[passed_a - low] + math.log1p(_RELATIVE_TOLERANCE)
    kept = [value for value in logs if value <= bound]
    peak = max(kept)
    return min(1.0, math.exp(peak - denominator) * math.fsum(math.exp(v - peak) for v in kept))


def holm_adjusted(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment (Holm, S. 1979, "A simple sequentially rejective multiple test
    procedure", Scandinavian Journal of Statistics 6(2):65-70), in the order given: rejecting where the
    adjusted p-value is at most alpha keeps the chance of any false rejection among them at most alpha."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted

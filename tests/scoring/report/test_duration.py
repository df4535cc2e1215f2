"""Durations on the HTML page in the unit each value needs (issue 28: `0.02269 ms` read as noise)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.report.text import duration


@pytest.mark.parametrize(
    ("value_ms", "shown"),
    [
        (None, "-"),
        (0, "0 ms"),
        (0.0005, "500 ns"),
        (0.02269, "22.7 µs"),
        (0.99996, "1 ms"),  # 999.96 µs rounds up into the next unit, never "1e+03 µs"
        (12, "12 ms"),
        (350.2, "350 ms"),
        (999.96, "1 s"),
        (1240, "1.24 s"),
        (59_999, "60 s"),
        (3_600_000, "3,600 s"),
    ],
)
def test_each_value_in_the_unit_it_needs(value_ms: float | None, shown: str) -> None:
    assert duration(value_ms) == shown


@given(st.floats(min_value=1e-6, max_value=1e9, allow_nan=False))
def test_three_significant_digits_below_a_thousand_of_the_unit(value_ms: float) -> None:
    number, unit = duration(value_ms).split(" ")
    factor = {"ns": 1e-6, "µs": 1e-3, "ms": 1.0, "s": 1000.0}[unit]
    assert "e" not in number
    shown = float(number.replace(",", ""))
    assert shown == pytest.approx(value_ms / factor, rel=5e-3, abs=0.5 if unit == "s" else 0)
    assert shown < 1000 or unit == "s"

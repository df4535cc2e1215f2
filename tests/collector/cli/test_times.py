"""Times on the command line (`--since`, `--until` of export and of scoring from ClickHouse) are UTC: an
offset is converted, not dropped."""

from __future__ import annotations

import argparse
from datetime import datetime

import pytest

from collector.cli._parser_clickhouse import iso_time


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-12-01T02:00+02:00", datetime(2026, 12, 1, 0, 0)),
        ("2026-12-01T00:00Z", datetime(2026, 12, 1, 0, 0)),
        ("2026-11-30T19:00-05:00", datetime(2026, 12, 1, 0, 0)),
        ("2026-12-01T00:00", datetime(2026, 12, 1, 0, 0)),
        ("2026-12-01", datetime(2026, 12, 1, 0, 0)),
    ],
)
def test_a_time_is_read_as_utc(text: str, utc: datetime) -> None:
    assert iso_time(text) == utc


def test_a_time_that_is_not_one_says_what_is_expected() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="ISO 8601"):
        iso_time("yesterday")

"""Reading the longest commit during a checkpoint from a server's /metrics (bench/servers.py): the
figure `make bench` takes from whichever metric the writer exposes, or none."""

from __future__ import annotations

from bench.servers import longest_commit_during_checkpoint_ms, parse_metrics

PLAIN = """# HELP tracescore_checkpoints_total WAL checkpoints.
# TYPE tracescore_checkpoints_total counter
tracescore_checkpoints_total 4
tracescore_last_checkpoint_seconds 0.61
"""


def test_no_such_metric_is_none() -> None:
    assert longest_commit_during_checkpoint_ms(parse_metrics(PLAIN)) is None


def test_a_gauge_in_seconds_is_read_in_milliseconds() -> None:
    text = PLAIN + "tracescore_checkpoint_longest_commit_seconds 0.0425\n"
    assert longest_commit_during_checkpoint_ms(parse_metrics(text)) == 42.5


def test_a_name_in_milliseconds_is_read_as_it_is() -> None:
    text = PLAIN + "tracescore_longest_commit_during_checkpoint_ms 37\n"
    assert longest_commit_during_checkpoint_ms(parse_metrics(text)) == 37


def test_counts_and_sums_are_not_durations_the_largest_quantile_is() -> None:
    text = PLAIN + "\n".join(
        [
            'tracescore_commit_during_checkpoint_seconds{quantile="0.5"} 0.004',
            'tracescore_commit_during_checkpoint_seconds{quantile="1"} 0.09',
            "tracescore_commit_during_checkpoint_seconds_sum 12.5",
            "tracescore_commit_during_checkpoint_seconds_count 900",
            "tracescore_commits_during_checkpoint_total 900",
        ]
    )
    assert longest_commit_during_checkpoint_ms(parse_metrics(text)) == 90

"""The arguments of scoring from ClickHouse (`score`/`report --clickhouse`) and the times they take:
kept apart from collector/cli/_parser.py, which holds every other subcommand's."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path


def iso_time(text: str) -> datetime:
    """An ISO 8601 time as naive UTC: `Z` or an offset is converted, a time without one is taken as UTC."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 time such as 2026-12-01T00:00, got {text!r}"
        ) from exc
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.replace(tzinfo=None)


def clickhouse_arguments(p: argparse.ArgumentParser, *, score: bool) -> None:
    g = p.add_argument_group("scoring from ClickHouse (docs/deployment.md)")
    g.add_argument(
        "--clickhouse",
        metavar="URL",
        help="read the OpenTelemetry Collector's otel_traces table instead of --db: http://host:8123, "
        "https://… (user and password from the URL or TRACESCORE_CH_USER / TRACESCORE_CH_PASSWORD), "
        "or chdb:PATH (ClickHouse's engine in this process on a data directory)",
    )
    g.add_argument("--ch-database", default="otel", help="database of the traces table (default otel)")
    g.add_argument("--ch-table", default="otel_traces", help="traces table (default otel_traces)")
    g.add_argument("--shard", metavar="I/N", help="only the traces with cityHash64(TraceId) %% N = I")
    g.add_argument(
        "--batch-traces",
        type=int,
        default=1000,
        help="traces read and judged at a time (bounds memory; default 1000)",
    )
    g.add_argument(
        "--conventions",
        type=Path,
        action="append",
        metavar="FILE",
        help="conventions file teaching your own tool span format, as serve --conventions "
        "(docs/conventions.md); repeatable",
    )
    if not score:
        return
    g.add_argument(
        "--store",
        action="store_true",
        help="write the verdicts to tracescore_verdicts in the same database (created if missing)",
    )
    g.add_argument(
        "--follow",
        action="store_true",
        help="keep scoring traces as they go quiet, storing verdicts and a watermark (implies --store; "
        "resumes after a restart)",
    )
    g.add_argument(
        "--settle-seconds",
        type=float,
        default=30.0,
        help="--follow takes a trace once none of its spans ended for this long (default 30)",
    )
    g.add_argument("--poll-seconds", type=float, default=5.0, help="--follow: wait between looks (default 5)")

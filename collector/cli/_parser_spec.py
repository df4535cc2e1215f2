"""The arguments of `tracescore spec draft` (collector/cli/_spec_draft.py runs it). Parsers only: every
command's parser is built when any command runs, `serve` too, so nothing here imports scoring."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from collector.cli._parser_clickhouse import clickhouse_arguments
from collector.cli._parser_selection import selection_arguments

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def spec_parser(sub: Subparsers) -> None:
    p = sub.add_parser("spec", help="work with specs: `spec draft` writes one from chosen good runs")
    actions = p.add_subparsers(dest="spec_command", required=True)
    d = actions.add_parser(
        "draft",
        help="draft a spec that the chosen runs pass, each line with its evidence; a starting point to edit",
        description="Draft a spec from chosen runs of a database file: the tools every run used, argument "
        "values constant across runs, the values seen of varying ones, call counts, the order when every "
        "run agreed, latency bounds from the slowest call plus a margin, strict mode when the tool set "
        "never varied. The draft is judged on every run it came from; a check one of them fails is taken "
        "out. While serve holds the file, the draft is made from its complete traces, read through its API.",
    )
    d.add_argument("--db", type=Path, default=Path("tracescore.duckdb"), help="DuckDB file")
    d.add_argument("--server", help="a running tracescore's HTTP API, e.g. http://127.0.0.1:4318")
    d.add_argument("--task", help="draft from the runs of this task id")
    d.add_argument("--run", action="append", help="draft from this run id; repeatable")
    d.add_argument("--name", help="the spec's name (default: the task, else 'drafted')")
    d.add_argument(
        "--margin",
        type=float,
        default=0.5,
        # 100 ms: scoring/report/draft.py MIN_LATENCY_MS (tests/collector/cli/test_spec_draft.py)
        help="latency bounds are the slowest call seen times 1 + MARGIN (default 0.5: 50%% above), at "
        "least 100 ms",
    )
    d.add_argument("--output", "-o", type=Path, help="write the draft to this file instead of stdout")
    selection_arguments(d)  # the same choice of runs as `score`'s
    clickhouse_arguments(d, score=False)

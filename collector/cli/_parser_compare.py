"""The arguments of `tracescore compare` (collector/cli/_compare.py) and `tracescore diff`, which share
the gate (--alpha, --fail-on); kept beside collector/cli/_parser.py, which holds the other subcommands'."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from collector.cli._parser_clickhouse import clickhouse_arguments
from collector.cli._parser_selection import selection_arguments
from scoring.report.diff import ADJUSTMENTS, DEFAULT_ALPHA, FAIL_ON

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a significance level between 0 and 1, e.g. 0.05, got {text!r}"
        )
    return value


def gate_arguments(p: argparse.ArgumentParser, *, fail_on: str) -> None:
    """--alpha, --adjust and --fail-on, shared by `compare` and `diff`."""
    p.add_argument(
        "--alpha",
        type=_alpha,
        default=DEFAULT_ALPHA,
        help="significance level of the exact test, and 1 - the intervals' confidence "
        f"(default {DEFAULT_ALPHA})",
    )
    p.add_argument(
        "--adjust",
        choices=ADJUSTMENTS,
        default="holm",
        help="p-values of the task/spec pairs adjusted by Holm's method before they meet alpha, so that "
        "many pairs do not make a false alarm likely (default holm); none: each pair on its own",
    )
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=fail_on,
        help="exit 1 on: regression, a significantly lower pass rate (adjusted p <= alpha); "
        f"any-regression, any lower pass rate; never (default {fail_on})",
    )


def compare_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "compare",
        help="pass rates of two values of a run attribute (e.g. service.version) per task and spec, with "
        "intervals and an exact test",
        description="Group the complete runs by the value of --by, score each group against --spec (nothing "
        "is stored), and compare the two per task and spec: pass rates with Wilson score intervals, "
        "pass@k and pass^k with one k, and Fisher's exact test (docs/scoring.md, 'Comparing versions'). "
        "Without VALUEs, the two values most recently first seen: the newer is AFTER.",
    )
    p.add_argument("values", nargs="*", metavar="VALUE", help="BEFORE and AFTER: two values of --by")
    p.add_argument(
        "--db",
        type=Path,
        default=Path("tracescore.duckdb"),
        help="DuckDB file; when a running serve holds it, its API is used instead",
    )
    p.add_argument("--server", help="a running tracescore's HTTP API, e.g. http://127.0.0.1:4318")
    p.add_argument(
        "--spec", type=Path, action="append", required=True, help="spec file or directory; repeatable"
    )
    p.add_argument(
        "--by",
        required=True,
        metavar="KEY",
        help="the run attribute whose values are compared: service.version, deployment.environment, any "
        "resource or root-span attribute, or agent, service.name",
    )
    p.add_argument("--task", help="only this task id")
    p.add_argument("--k", type=int, help="k for pass@k and pass^k (default: the smaller group's rollouts)")
    gate_arguments(p, fail_on="never")
    p.add_argument("--format", choices=("table", "json"), default="table")
    selection_arguments(p)
    clickhouse_arguments(p, score=False)


def diff_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "diff",
        help="compare two saved results (score or report --format json) per task, with intervals and an "
        "exact test",
    )
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument(
        "--allow-spec-change",
        action="store_true",
        help="compare even when a spec's fingerprint differs between the two",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--k", type=int, help="k for pass@k and pass^k (default: the smaller side's rollouts)")
    gate_arguments(p, fail_on="any-regression")

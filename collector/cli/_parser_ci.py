"""The arguments that make `score` and `report` a CI gate (`--allow-empty`, `--wait`), and `tracescore
check`'s: kept apart from collector/cli/_parser.py, which holds every other subcommand's."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_CODES = "exit 0 all passed, 1 any failed, 2 usage or spec error, 3 nothing scored"
REPORT_HELP = (
    "per-task pass rates, pass@k and pass^k over the rollouts of each task; exit 3 when nothing was scored"
)
SCORE_FORMATS = ("table", "json", "junit")
SCORE_FORMAT_HELP = (
    "junit: JUnit XML, a test case per run and spec; in GitHub Actions failures are also annotated"
)


def positive_seconds(text: str) -> float:
    """A duration flag's value: seconds above 0 (also the parser's own flags)."""
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from exc
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def gate_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("as a CI gate (docs/scoring.md#as-a-ci-gate)")
    g.add_argument(
        "--allow-empty",
        action="store_true",
        help="exit 0 when no run was scored (by default: exit 3, with one line saying why: no runs, "
        "no spec's select matched, or runs not complete yet)",
    )
    g.add_argument(
        "--wait",
        type=positive_seconds,
        metavar="SECONDS",
        help="first wait up to SECONDS for the running serve to complete the runs it has received (their "
        "grace period); what never arrived is not waited for",
    )


def check_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "check",
        help="validate spec files exactly as serve loads them; with data, name what they expect and "
        "it never showed",
        description="Validate spec files and directories exactly as `serve` loads them (the same loader, "
        "after the same --plugin modules): one line per broken file naming the problem, exit 2. With "
        "--db (or --server), also warn about every tool a spec expects and every select key or value "
        "that the stored data never showed; warnings exit 0, or 1 with --strict.",
    )
    p.add_argument("specs", type=Path, nargs="+", metavar="SPECS", help="spec files or directories")
    p.add_argument(
        "--plugin",
        dest="plugins",
        action="append",
        help="Python module to import first, as serve --plugin (it may register checks)",
    )
    p.add_argument(
        "--db",
        type=Path,
        help="DuckDB file to compare the specs with; when a running serve holds it, its API is used",
    )
    p.add_argument("--server", help="a running tracescore's HTTP API, e.g. http://127.0.0.1:4318")
    p.add_argument(
        "--strict", action="store_true", help="exit 1 when the data never showed something a spec names"
    )

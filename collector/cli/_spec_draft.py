"""`tracescore spec draft`: a spec drafted from chosen runs of a database file (scoring/report/draft.py),
printed or written, for the user to edit. The runs are chosen as `score` chooses them (`--task`, `--run`,
`--where`, `--since`, `--until`), from the file or, with `--clickhouse`, from the Collector's
`otel_traces` table: the chosen traces go through the decode stage's preparing and the writer into a
scratch store first, as `score --clickhouse` judges them (collector/clickhouse/scorer.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from collector.cli import _clickhouse_commands as clickhouse
from collector.cli._parser_clickhouse import clickhouse_arguments, iso_time
from collector.cli._parser_selection import _where
from collector.cli._scoring_commands import UserError, _connect, run_window
from collector.clickhouse.connection import connect
from collector.clickhouse.scorer import Scratch, load_window
from scoring.evidence.runs import complete_runs, load_evidence
from scoring.report.draft import MIN_LATENCY_MS, draft_spec
from scoring.spec.window import RunWindow, chosen_run_ids

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


class DraftError(UserError):
    """Nothing to draft from, or a draft that could not be made to pass its runs."""


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
        "out. Stop serve first, or draft from a copy: the file is opened read-only.",
    )
    d.add_argument("--db", type=Path, default=Path("tracescore.duckdb"), help="DuckDB file")
    d.add_argument("--task", help="draft from the runs of this task id")
    d.add_argument("--run", action="append", help="draft from this run id; repeatable")
    d.add_argument("--name", help="the spec's name (default: the task, else 'drafted')")
    d.add_argument(
        "--margin",
        type=float,
        default=0.5,
        help="latency bounds are the slowest call seen times 1 + MARGIN (default 0.5: 50%% above), at "
        f"least {MIN_LATENCY_MS} ms",
    )
    d.add_argument("--output", "-o", type=Path, help="write the draft to this file instead of stdout")
    g = d.add_argument_group("choosing runs (as `score` chooses them)")
    g.add_argument("--since", type=iso_time, help="only runs that started at or after this time (ISO 8601)")
    g.add_argument("--until", type=iso_time, help="only runs that started before this time")
    g.add_argument(
        "--where",
        type=_where,
        action="append",
        metavar="KEY=VALUE",
        help="only runs whose KEY equals VALUE, compared as a spec's select; repeatable (as `score --where`)",
    )
    clickhouse_arguments(d, score=False)


def run_spec(args: argparse.Namespace) -> int:
    clickhouse.check_flags(args)
    if args.clickhouse:
        text = _from_clickhouse(args)
    else:
        connection = _connect(args.db, write=False)
        try:
            text = draft_text(connection, args, run_window(args))
        finally:
            connection.close()
    if args.output is not None:
        args.output.write_text(text)
        print(f"tracescore: wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _from_clickhouse(args: argparse.Namespace) -> str:
    """The chosen traces (--since and --until are ClickHouse's to apply) into a scratch store, then drafted
    from there with --where, --task and --run."""
    connection = connect(args.clickhouse)
    scratch = Scratch()
    try:
        load_window(connection, clickhouse.selection(args), scratch, batch_traces=args.batch_traces)
        return draft_text(scratch.connection, args, RunWindow.of(where=args.where or ()))
    finally:
        scratch.close()
        connection.close()


def draft_text(connection: duckdb.DuckDBPyConnection, args: argparse.Namespace, window: RunWindow) -> str:
    chosen = chosen_run_ids(connection, window, task_id=args.task)
    runs = complete_runs(connection, task_id=args.task, run_ids=chosen)
    if args.run:
        wanted = set(args.run)
        runs = [r for r in runs if r[0].run_id in wanted]
        missing = wanted - {r[0].run_id for r in runs}
        if missing:
            raise DraftError(f"no complete run {', '.join(sorted(missing))} (among those chosen)")
    try:
        evidence = load_evidence(connection, runs)
        draft = draft_spec(evidence, args.name or args.task or "drafted", margin=args.margin)
    except ValueError as exc:
        raise DraftError(str(exc)) from exc
    return draft.yaml()

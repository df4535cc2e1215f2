"""`tracescore spec draft`: a spec drafted from chosen runs of a database file (scoring/report/draft.py),
printed or written, for the user to edit. The runs are chosen as `score` chooses them (`--task`, `--run`,
`--where`, `--since`, `--until`), from the file; from the running serve that holds it (or `--server`),
through its export stream (collector/cli/_draft_from_server.py); or, with `--clickhouse`, from the
Collector's `otel_traces` table. The last two go through the decode stage's preparing and the writer into
a scratch store first, as `score --clickhouse` judges them (collector/clickhouse/scorer.py)."""

from __future__ import annotations

import argparse
import sys

import duckdb

from collector.cli import _clickhouse_commands as clickhouse
from collector.cli import _client as client
from collector.cli._draft_from_server import server_spans
from collector.cli._scoring_commands import _connect, run_window
from collector.clickhouse.connection import connect
from collector.clickhouse.scorer import Scratch, load_spans, load_window
from scoring import SpecError
from scoring.evidence.runs import complete_runs, load_evidence
from scoring.report.draft import draft_spec
from scoring.spec.window import RunWindow, chosen_run_ids


class DraftError(SpecError):
    """No spec could be drafted: nothing to draft from, or runs that agree on nothing a spec checks."""


def run_spec(args: argparse.Namespace) -> int:
    clickhouse.check_flags(args)
    server = None if args.clickhouse else client.discover(args.db, args.server)
    if args.clickhouse:
        text = _from_clickhouse(args)
    elif server is not None:
        text = _from_server(args, server)
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


def _from_server(args: argparse.Namespace, server: str) -> str:
    """The server's complete traces into a scratch store, then drafted from there with the whole window
    (a run is chosen by its first span's start, which only the whole run tells)."""
    scratch = Scratch()
    try:
        load_spans(scratch.connection, list(server_spans(server)))
        return draft_text(scratch.connection, args, run_window(args))
    finally:
        scratch.close()


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

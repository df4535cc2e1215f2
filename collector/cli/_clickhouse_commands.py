"""`tracescore score|report --clickhouse URL`: the same verdicts and reports, from the Collector's
`otel_traces` table in ClickHouse rather than from a DuckDB file (collector/clickhouse/)."""

from __future__ import annotations

import argparse
import calendar
import json
import signal
import sys
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from collector.cli import _scoring_commands as commands
from collector.cli._errors import UserError
from collector.cli._gate_clickhouse import clickhouse_reason
from collector.clickhouse.connection import Connection, connect
from collector.clickhouse.scorer import Scratch, follow, load_window, score_window
from collector.clickhouse.selection import Selection, Shard
from collector.recognise.declared import active
from collector.recognise.declared.files import load_conventions
from scoring import Spec, load_specs
from scoring.batch.score import Scored, score_records
from scoring.report.build import Report, build_report
from scoring.report.text import verdicts_text
from scoring.spec.window import RunWindow

# Flags that only mean something with --clickhouse, and their defaults (--since, --until and --where
# choose runs in every store: collector/cli/_parser_selection.py).
_CLICKHOUSE_ONLY = {
    "shard": None,
    "store": False,
    "follow": False,
    "ch_database": "otel",
    "ch_table": "otel_traces",
    "batch_traces": 1000,
    "settle_seconds": 30.0,
    "poll_seconds": 5.0,
}


def _ns(moment: datetime | None) -> int | None:
    """A naive time from the command line, taken as UTC, in Unix nanoseconds."""
    if moment is None:
        return None
    return calendar.timegm(moment.timetuple()) * 1_000_000_000 + moment.microsecond * 1000


def check_flags(args: argparse.Namespace) -> None:
    """Selection flags without --clickhouse are a mistake, not something to ignore quietly."""
    conventions = getattr(args, "conventions", None)
    if getattr(args, "clickhouse", None):
        if getattr(args, "server", None):
            raise UserError("--server and --clickhouse read different stores: pass one of them")
        if args.batch_traces < 1:
            raise UserError("--batch-traces must be 1 or more")
        # The batches' spans are recognised in this process, with this command's conventions (a broken
        # file: exit 2) or none.
        active.install(load_conventions(list(conventions)) if conventions else None)
        return
    if conventions:
        raise UserError(
            "--conventions recognises the spans read from ClickHouse (add --clickhouse URL); the executions "
            "in a --db were recognised when serve stored them: give serve --conventions"
        )
    for name, default in _CLICKHOUSE_ONLY.items():
        if getattr(args, name, default) != default:
            flag = "--" + name.replace("_", "-")
            raise UserError(f"{flag} reads from ClickHouse: add --clickhouse URL (or drop {flag})")


def selection(args: argparse.Namespace) -> Selection:
    try:
        shard = Shard.parse(args.shard) if args.shard else None
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    since, until = _ns(args.since), _ns(args.until)
    if since is not None and until is not None and since >= until:
        raise UserError("--since must be before --until")
    return Selection(args.ch_database, args.ch_table, since, until, shard)


def _open(args: argparse.Namespace) -> Connection:
    return connect(args.clickhouse)


def run_score(args: argparse.Namespace) -> int:
    check_flags(args)
    if args.follow:
        if not args.clickhouse:
            raise UserError("--follow reads from ClickHouse: add --clickhouse URL")
        return run_follow(args, load_specs(args.spec))
    if not args.clickhouse:
        return commands.run_score(args)
    return commands.run_score(args, score, lambda a, s: clickhouse_reason(a, s, selection(a)))


def run_report(args: argparse.Namespace) -> int:
    check_flags(args)
    if not args.clickhouse:
        return commands.run_report(args)
    return commands.run_report(args, report, lambda a, s: clickhouse_reason(a, s, selection(a), task=a.task))


def where_window(args: argparse.Namespace) -> RunWindow | None:
    """`--where` as a window over each batch's runs; --since and --until are ClickHouse's to apply, by
    the trace's first span (collector/clickhouse/selection.py)."""
    where = getattr(args, "where", None)
    return RunWindow.of(where=where) if where else None


def score(args: argparse.Namespace, specs: Sequence[Spec]) -> list[Scored]:
    connection = _open(args)
    try:
        chosen = selection(args)
        return list(
            score_window(
                connection,
                chosen,
                specs,
                store=args.store,
                batch_traces=args.batch_traces,
                window=where_window(args),
            )
        )
    finally:
        connection.close()


def run_follow(args: argparse.Namespace, specs: Sequence[Spec]) -> int:
    """Score as traces go quiet until SIGINT or SIGTERM; each batch's verdicts are printed once stored."""
    stop = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stop)

    def emit(scored: list[Scored]) -> None:
        if args.format == "json":
            for verdict in scored:  # one JSON object a line, as `tracescore watch --format json`
                print(json.dumps(verdict.to_dict()))
        elif scored:
            print(verdicts_text(scored, trace_url=args.trace_url))
        sys.stdout.flush()

    connection = _open(args)
    try:
        follow(
            connection,
            selection(args),
            specs,
            emit,
            settle_s=args.settle_seconds,
            poll_s=args.poll_seconds,
            batch_traces=args.batch_traces,
            stop=stop,
            run_window=where_window(args),
        )
    finally:
        connection.close()
    return 0


def report(args: argparse.Namespace, specs: Sequence[Spec], include: tuple[str, ...]) -> tuple[Report, str]:
    """The chosen traces in one scratch store, scored once, reported like a DuckDB file."""
    connection = _open(args)
    scratch = Scratch()
    try:
        load_window(connection, selection(args), scratch, batch_traces=args.batch_traces)
        window = where_window(args)
        scored = score_records(scratch.connection, specs, task_id=args.task, store=True, window=window)
        verdicts = [s.verdict() for s in scored]
        built = build_report(
            scratch.connection,
            specs,
            verdicts,
            task=args.task,
            k=args.k,
            include=include,
            history_bucket=args.history_bucket,
            windowed=window is not None,
        )
    finally:
        scratch.close()
        connection.close()
    return built, connection.description

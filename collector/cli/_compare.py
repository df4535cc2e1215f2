"""`tracescore compare --by KEY [BEFORE AFTER]`: two groups of runs, told apart by the value of one run
attribute (`service.version`, `deployment.environment`, a git sha), scored against the same specs and
compared per task and spec with intervals and an exact test (scoring/report/diff.py).

The groups are scored afresh, never read from stored verdicts: both sides are then judged by exactly
the specs given (stored verdicts may come from older specs, or from none), and nothing is written. The
groups come from wherever the data is: the file, the serve that holds it, or ClickHouse (the window
loaded into a scratch store, as `report --clickhouse` does).
"""

from __future__ import annotations

import argparse
import json
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import duckdb

from collector.cli import _clickhouse_commands as clickhouse
from collector.cli import _client as client
from collector.cli._errors import UserError
from collector.cli._scoring_commands import (
    EXIT_FAILED,
    EXIT_OK,
    _connect,
    _spec_payload,
    _window_payload,
    run_window,
)
from collector.clickhouse.connection import connect
from collector.clickhouse.scorer import Scratch, load_window
from scoring import Spec, Verdict, aggregate, load_specs, verdict_from_dict
from scoring.batch.score import score_records
from scoring.report.diff import INTERVAL_NAME, TEST_NAME, TaskDelta, diff, gate_fails
from scoring.report.diff_text import deltas_text
from scoring.spec.window import GroupValue, RunWindow, group_values


class Source(Protocol):
    def values(self, key: str, window: RunWindow, task: str | None) -> list[GroupValue]: ...

    def verdicts(self, specs: list[Spec], window: RunWindow, task: str | None) -> list[Verdict]: ...


@dataclass
class _Connection:
    """The file, or ClickHouse's window in a scratch store: the same reads on a DuckDB connection."""

    connection: duckdb.DuckDBPyConnection

    def values(self, key: str, window: RunWindow, task: str | None) -> list[GroupValue]:
        return group_values(self.connection, key, window, task_id=task)

    def verdicts(self, specs: list[Spec], window: RunWindow, task: str | None) -> list[Verdict]:
        return [s.verdict() for s in score_records(self.connection, specs, task_id=task, window=window)]


@dataclass
class _Server:
    """A running serve: the values from `GET /api/v1/values`, the verdicts from `POST /api/v1/score`."""

    url: str

    def values(self, key: str, window: RunWindow, task: str | None) -> list[GroupValue]:
        query: list[tuple[str, str]] = [("key", key)]
        body = window.to_dict()
        query += [(name, body[name]) for name in ("since", "until") if body[name]]
        query += [("where", f"{k}={v}") for k, values in window.where.items() for v in values]
        if task is not None:
            query.append(("task", task))
        answer = client.get(self.url, "/api/v1/values?" + urllib.parse.urlencode(query))
        if not isinstance(answer, list):
            raise UserError(f"{self.url} answered no list of values: is it an older tracescore?")
        return [
            GroupValue(
                str(item["value"]),
                int(item["n_runs"]),
                _moment(item["first_start"]),
                _moment(item["last_start"]),
            )
            for item in answer
        ]

    def verdicts(self, specs: list[Spec], window: RunWindow, task: str | None) -> list[Verdict]:
        payload = {
            "specs": _spec_payload(specs),
            "task": task,
            "store": False,
            **_window_payload(window, self.url),
        }
        answer = client.post(self.url, "/api/v1/score", payload)
        if not isinstance(answer, list):
            raise UserError(f"{self.url} answered no list of verdicts: is it a tracescore?")
        return [verdict_from_dict(item) for item in answer]


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


@contextmanager
def _source(args: argparse.Namespace) -> Iterator[tuple[Source, RunWindow, str]]:
    """Where the runs are, the window to ask it for, and a name for it."""
    window = run_window(args)
    if args.clickhouse:
        # ClickHouse chooses the traces by time (their first span); the scratch store then applies --where.
        connection = connect(args.clickhouse)
        scratch = Scratch()
        try:
            load_window(connection, clickhouse.selection(args), scratch, batch_traces=args.batch_traces)
            yield _Connection(scratch.connection), RunWindow(where=window.where), connection.description
        finally:
            scratch.close()
            connection.close()
        return
    server = client.discover(args.db, args.server)
    if server is not None:
        yield _Server(server), window, server
        return
    file = _connect(args.db, write=False)
    try:
        yield _Connection(file), window, str(args.db)
    finally:
        file.close()


def _described(key: str, found: Sequence[GroupValue]) -> str:
    if not found:
        return f"no complete run chosen has a value of {key}"
    listed = ", ".join(
        f"{v.value} ({v.n_runs} run(s), first {v.first_start:%Y-%m-%d %H:%M:%S})" for v in found[:5]
    )
    return f"{key} has {len(found)} value(s) among the complete runs chosen: {listed}"


def _groups(args: argparse.Namespace, source: Source, window: RunWindow) -> tuple[str, str]:
    if args.values:
        before, after = args.values
        if before == after:
            raise UserError(f"compare needs two different values of {args.by}, got {before!r} twice")
        return before, after
    found = source.values(args.by, window, args.task)
    if len(found) < 2:
        raise UserError(
            f"{_described(args.by, found)}; compare needs two "
            f"(name them: tracescore compare --by {args.by} BEFORE AFTER)"
        )
    return found[1].value, found[0].value


def _check(args: argparse.Namespace) -> None:
    clickhouse.check_flags(args)
    if args.values and len(args.values) != 2:
        raise UserError(
            f"give two values of {args.by} to compare (BEFORE AFTER), or none for the two most recently "
            f"first seen; got {len(args.values)}"
        )
    if args.k is not None and args.k < 1:
        raise UserError("--k must be 1 or more")
    if args.where and any(key == args.by for key, _ in args.where):
        raise UserError(f"--by {args.by} chooses the groups: drop --where {args.by}=…")


def _runs(verdicts: Sequence[Verdict]) -> int:
    return len({v.run_id for v in verdicts})


def run_compare(args: argparse.Namespace) -> int:
    _check(args)
    specs = load_specs(args.spec)
    with _source(args) as (source, window, name):
        before, after = _groups(args, source, window)
        sides = [
            source.verdicts(specs, window.narrowed(args.by, value), args.task) for value in (before, after)
        ]
    for value, verdicts in zip((before, after), sides, strict=True):
        if not verdicts:
            raise UserError(
                f"no complete run with {args.by}={value} was scored in {name}: none has that value in the "
                "window, or no spec selects those that do; nothing to compare"
            )
    deltas = diff(aggregate(sides[0]), aggregate(sides[1]), alpha=args.alpha, k=args.k, adjust=args.adjust)
    if args.format == "json":
        print(json.dumps(_document(args, window, before, after, sides, deltas), indent=2))
    else:
        print(
            f"{args.by}: {before} ({_runs(sides[0])} run(s)) -> {after} ({_runs(sides[1])} run(s)), "
            f"from {name}\n"
        )
        labels = {"before": f"{args.by}={before}", "after": f"{args.by}={after}"}
        print(deltas_text(deltas, alpha=args.alpha, adjust=args.adjust, **labels))
    return EXIT_FAILED if gate_fails(deltas, args.fail_on) else EXIT_OK


def _document(
    args: argparse.Namespace,
    window: RunWindow,
    before: str,
    after: str,
    sides: list[list[Verdict]],
    deltas: list[TaskDelta],
) -> dict[str, Any]:
    return {
        "by": args.by,
        "before": {"value": before, "n_runs": _runs(sides[0])},
        "after": {"value": after, "n_runs": _runs(sides[1])},
        "window": window.to_dict(),
        "alpha": args.alpha,
        "interval": f"{INTERVAL_NAME} at {1 - args.alpha:g}",
        "test": TEST_NAME,
        "adjust": args.adjust,
        "fail_on": args.fail_on,
        "significant_regressions": sum(1 for d in deltas if d.significant_regression),
        "significant_improvements": sum(1 for d in deltas if d.significant and d.change == "improved"),
        "rows": [d.to_dict() for d in deltas],
    }

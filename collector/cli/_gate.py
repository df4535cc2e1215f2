"""The gate fails closed: `score` and `report` exit 3 when no run was scored (issue 28), with one line
saying why (collector/cli/_unscored.py), unless `--allow-empty`; `--wait SECONDS` first waits for the
runs a running server is completing.

A CI job that scores nothing (an exporter pointed elsewhere, a typo in a `select`, a score run within
the grace period) must not pass. The same questions are asked wherever the runs are: the database file,
the server holding it (through its read-only SQL endpoint), or ClickHouse (its first batch of chosen
traces, loaded as `score --clickhouse` loads them).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from collector.cli import _client as client
from collector.cli._client import ServerError
from collector.cli._unscored import Query, Scope, Where, explain, window
from collector.clickhouse.connection import ClickHouseError
from collector.serve.settings import SettingError
from collector.store.database import DatabaseError
from scoring import Spec

EXIT_NOTHING_SCORED = 3
_POLL_S = 0.25


class ServerQuery:
    """Read-only SQL through a running server (`/api/v1/sql`), as a `Query`."""

    def __init__(self, base: str) -> None:
        self.base = base

    def __call__(self, sql: str) -> Sequence[Sequence[Any]]:
        answer = client.post(self.base, "/api/v1/sql", {"query": sql})
        if not isinstance(answer, dict) or not isinstance(answer.get("rows"), list):
            raise DatabaseError(f"{self.base} answered SQL without rows: is it a tracescore?")
        rows: list[list[Any]] = answer["rows"]
        return rows


def scope(args: argparse.Namespace) -> Scope:
    """The runs the command names: --run, --task, and --since/--until/--where where it has them."""
    since, until = getattr(args, "since", None), getattr(args, "until", None)
    where = tuple(getattr(args, "where", None) or ())
    return Scope(getattr(args, "run", None), getattr(args, "task", None), since, until, where)


def wait_for_runs(args: argparse.Namespace) -> None:
    """With `--wait SECONDS` and a running server: until no received trace is still waiting for its runs
    to complete, or the time is up (then scoring goes on with what is complete, and says what was not)."""
    seconds = getattr(args, "wait", None)
    if not seconds:
        return
    if getattr(args, "clickhouse", None):
        raise SettingError(
            "--wait waits for a running tracescore serve to complete runs; ClickHouse has no such "
            "moment: choose settled traces with --until (or drop --wait)"
        )
    server = client.discover(args.db, args.server)
    if server is None:  # no server: nothing completes runs while we wait
        return
    query = ServerQuery(server)
    asked = scope(args)
    deadline = time.monotonic() + seconds
    while True:
        seen = window(query, asked)
        if seen.ready:
            return
        if time.monotonic() >= deadline:
            if seen.complete and seen.pending_traces:
                print(
                    f"tracescore: --wait {seconds:g}: {seen.pending_traces} trace(s) still not complete; "
                    "scoring the complete runs",
                    file=sys.stderr,
                )
            return
        time.sleep(_POLL_S)


Connect = Callable[[Path], duckdb.DuckDBPyConnection]
Explain = Callable[[argparse.Namespace, Sequence[Spec]], str]


def reason(args: argparse.Namespace, specs: Sequence[Spec], connect_file: Connect) -> str:
    """Why nothing was scored, asked of the server holding the file, or of the file."""
    asked = scope(args)
    server = client.discover(args.db, args.server)
    if server is not None:
        waited = getattr(args, "wait", None)
        return explain(ServerQuery(server), specs, asked, Where(True, waited))
    connection = connect_file(args.db)
    try:
        query: Query = lambda sql: connection.execute(sql).fetchall()  # noqa: E731
        return explain(query, specs, asked, Where(False))
    finally:
        connection.close()


def explained(args: argparse.Namespace, specs: Sequence[Spec], explain_from: Explain) -> str:
    """Why nothing was scored; the gate fails closed even when the asking fails (an older server)."""
    try:
        return explain_from(args, specs)
    except (ServerError, DatabaseError, ClickHouseError, duckdb.Error) as exc:
        return f"no verdict came back (and asking the store why failed: {exc})"


def nothing_scored(args: argparse.Namespace, why: str) -> int:
    """The line and the exit code when nothing was scored: 3, or 0 under --allow-empty."""
    if getattr(args, "allow_empty", False):
        print(f"tracescore: nothing scored ({why}); --allow-empty: exit 0", file=sys.stderr)
        return 0
    print(f"tracescore: nothing scored: {why}", file=sys.stderr)
    return EXIT_NOTHING_SCORED

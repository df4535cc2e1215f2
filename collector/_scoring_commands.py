"""`tracescore score`, `report` and `diff`: the scoring package driven from the CLI.

The CLI owns the database file (opening it, and saying clearly when another process holds it);
scoring gets a connection and never knows where it came from.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import duckdb

from collector._database import DatabaseError, explain_open_error
from scoring import (
    aggregate,
    diff,
    ensure_verdict_schema,
    load_results,
    load_specs,
    score_runs,
    store_verdicts,
)
from scoring._format import tasks_html, tasks_json, tasks_text, verdicts_json, verdicts_text

EXIT_OK, EXIT_FAILED = 0, 1


class UserError(Exception):
    """A mistake in how the command was called."""


def _connect(path: Path, *, write: bool) -> duckdb.DuckDBPyConnection:
    if not path.exists():
        raise DatabaseError(f"{path} does not exist; run `tracescore serve --db {path}` first, or pass --db")
    try:
        connection = duckdb.connect(str(path), read_only=not write)
    except duckdb.Error as exc:
        raise explain_open_error(path, exc) from exc
    tables = {
        row[0] for row in connection.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    if "run_traces" not in tables:
        connection.close()
        raise DatabaseError(f"{path} is not a tracescore database (no run_traces table)")
    return connection


def run_score(args: argparse.Namespace) -> int:
    specs = load_specs(args.spec)  # a broken spec stops everything before any scoring
    connection = _connect(args.db, write=not args.no_store)
    try:
        verdicts = list(score_runs(connection, specs, run_id=args.run, task_id=args.task))
        if not args.no_store:
            ensure_verdict_schema(connection)
            store_verdicts(connection, verdicts)
    finally:
        connection.close()
    print(verdicts_json(verdicts) if args.format == "json" else verdicts_text(verdicts))
    return EXIT_OK if all(v.label == "pass" for v in verdicts) else EXIT_FAILED


def run_report(args: argparse.Namespace) -> int:
    if args.k is not None and args.k < 1:
        raise UserError("--k must be 1 or more")
    specs = load_specs(args.spec)
    connection = _connect(args.db, write=False)
    try:
        verdicts = list(score_runs(connection, specs, task_id=args.task))
    finally:
        connection.close()
    results = aggregate(verdicts, k=args.k)
    render = {"json": tasks_json, "html": tasks_html}.get(args.format, tasks_text)
    print(render(results))
    return EXIT_OK


def run_diff(args: argparse.Namespace) -> int:
    deltas = diff(
        load_results(args.before), load_results(args.after), allow_spec_change=args.allow_spec_change
    )
    if args.format == "json":
        print(json.dumps([d.to_dict() for d in deltas], indent=2))
    else:
        for d in deltas:
            before = "-" if d.before is None else f"{d.before:.2f}"
            after = "-" if d.after is None else f"{d.after:.2f}"
            print(f"{d.task or '-':<32} {d.spec:<28} {before:>5} -> {after:<5} {d.change}")
    return EXIT_FAILED if any(d.change == "regressed" for d in deltas) else EXIT_OK

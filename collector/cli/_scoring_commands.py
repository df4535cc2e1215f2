"""`tracescore score`, `report`, `diff`, `sql` and `watch`: the same output whether they read the file
or, when a server holds it, ask that server (`--server URL`, or found through `<db>.api.json`).

The CLI owns the database file (opening it, and saying clearly when another process holds it);
scoring gets a connection and never knows where it came from.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import os
import sys
import time
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from collector.cli import _client as client
from collector.cli import _gate as gate
from collector.cli._errors import UserError
from collector.cli._github import annotate
from collector.cli._junit import write_junit
from collector.cli._logging import Progress, status_line
from collector.store.database import DatabaseError, explain_open_error
from collector.store.sql import query_file, render_rows
from scoring import (
    Spec,
    TaskResult,
    Verdict,
    diff,
    ensure_verdict_schema,
    load_results,
    load_specs,
    verdict_from_dict,
)
from scoring.batch.score import Scored, score_records
from scoring.evidence.runs import complete_run_ids
from scoring.report.build import Report, ReportError, build_report, sections
from scoring.report.diff import gate_fails
from scoring.report.diff_text import deltas_text
from scoring.report.html import report_html
from scoring.report.text import (
    VerdictView,
    report_json,
    report_text,
    tasks_json,
    verdict_value,
    verdicts_text,
    write_verdicts_json,
)
from scoring.spec.window import RunWindow, chosen_run_ids

EXIT_OK, EXIT_FAILED = 0, 1


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


def run_window(args: argparse.Namespace) -> RunWindow:
    """--since, --until and --where (collector/cli/_parser_selection.py) as the runs to choose."""
    try:
        return RunWindow.of(
            getattr(args, "since", None), getattr(args, "until", None), getattr(args, "where", None) or ()
        )
    except ValueError as exc:
        raise UserError(str(exc)) from exc


def _spec_payload(specs: list[Spec]) -> list[dict[str, object]]:
    return [s.model_dump(mode="json", exclude_none=True) for s in specs]


def _scored(
    connection: duckdb.DuckDBPyConnection,
    specs: list[Spec],
    *,
    run_id: str | None = None,
    task_id: str | None = None,
    store: bool = False,
    window: RunWindow | None = None,
) -> list[Scored]:
    """The verdicts of `score_runs`, judged set-based where the spec allows (scoring/batch/score.py) and
    stored as they come if asked, with a progress bar over the complete runs when stderr is a terminal."""
    verdicts = score_records(connection, specs, run_id=run_id, task_id=task_id, store=store, window=window)
    if status_line() is None:
        return list(verdicts)
    # Verdicts come in the runs' order: a verdict for run i means runs 0..i are done.
    chosen = chosen_run_ids(connection, window, run_id=run_id, task_id=task_id)  # in the runs' order too
    ids = chosen if chosen is not None else complete_run_ids(connection, run_id=run_id, task_id=task_id)
    order = {run: i for i, run in enumerate(ids)}
    scored = []
    with Progress("scoring", total=len(order)) as progress:
        for verdict in verdicts:
            scored.append(verdict)
            progress.set(order.get(verdict.run_id, -1) + 1)
        progress.set(len(order))
    return scored


def _ask(server: str, path: str, payload: dict[str, object]) -> object:
    with Progress(f"asking the tracescore server at {server}"):
        return client.post(server, path, payload)


def _score(args: argparse.Namespace, specs: list[Spec]) -> Sequence[VerdictView]:
    window = run_window(args)
    server = client.discover(args.db, args.server)
    if server is not None:
        payload = {
            "specs": _spec_payload(specs),
            "run": args.run,
            "task": args.task,
            "store": not args.no_store,
            **_window_payload(window, server),
        }
        return [verdict_from_dict(v) for v in _answer_list(_ask(server, "/api/v1/score", payload))]
    connection = _connect(args.db, write=not args.no_store)
    try:
        if not args.no_store:
            ensure_verdict_schema(connection)
        verdicts = _scored(
            connection, specs, run_id=args.run, task_id=args.task, store=not args.no_store, window=window
        )
    finally:
        connection.close()
    return verdicts


ScoreSource = Callable[[argparse.Namespace, list[Spec]], Sequence[VerdictView]]
ReportSource = Callable[[argparse.Namespace, list[Spec], tuple[str, ...]], tuple[Report, str]]


def run_score(
    args: argparse.Namespace, score_from: ScoreSource | None = None, explain_from: gate.Explain | None = None
) -> int:
    specs = load_specs(args.spec)  # a broken spec stops everything before any scoring
    gate.wait_for_runs(args)
    verdicts = (score_from or _score)(args, specs)
    # Nothing scored fails closed (exit 3), saying why, unless --allow-empty (collector/cli/_gate.py).
    empty = None if verdicts else gate.explained(args, specs, explain_from or _explain)
    if args.format == "json":
        write_verdicts_json(verdicts, sys.stdout)
    elif args.format == "junit":
        write_junit(verdicts, sys.stdout, empty=empty, allowed=args.allow_empty)
    else:
        print(verdicts_text(verdicts, trace_url=args.trace_url))
    annotate(verdicts, sys.stderr, empty=empty, allowed=args.allow_empty)
    if empty is not None:
        return gate.nothing_scored(args, empty)
    return EXIT_OK if all(v.label == "pass" for v in verdicts) else EXIT_FAILED


def _window_payload(window: RunWindow, server: str) -> dict[str, object]:
    """The window in a request body; nothing when it chooses every run. A server from before windows
    would ignore the fields and score every run: it is refused instead."""
    if window.everything:
        return {}
    _require_windows(server)
    return window.to_dict()


@functools.cache
def _require_windows(server: str) -> None:
    document = client.get(server, "/api/v1/openapi.json")
    if not isinstance(document, dict) or "/api/v1/values" not in document.get("paths", {}):
        raise UserError(
            f"the tracescore server at {server} is older than --since, --until and --where and would "
            "score every run: upgrade it, or stop it and read the file"
        )


def _explain(args: argparse.Namespace, specs: Sequence[Spec]) -> str:
    return gate.reason(args, specs, lambda path: _connect(path, write=False))


def _answer_list(answer: object) -> list[dict[str, Any]]:
    if not isinstance(answer, list):
        raise DatabaseError(f"the server answered {type(answer).__name__}, not a list: is it a tracescore?")
    return answer


def _report(args: argparse.Namespace, specs: list[Spec], include: tuple[str, ...]) -> tuple[Report, str]:
    """The report and where its data came from (the database file, or the server holding it)."""
    window = run_window(args)
    server = client.discover(args.db, args.server)
    if server is not None:
        payload: dict[str, object] = {
            "specs": _spec_payload(specs),
            "task": args.task,
            "k": args.k,
            **_window_payload(window, server),
        }
        if not include:  # the server's original answer: task results only
            results = _answer_list(_ask(server, "/api/v1/report", payload))
            return Report(tasks=[TaskResult(**r) for r in results]), server
        payload.update(include=list(include), history_bucket=args.history_bucket)
        answer = _ask(server, "/api/v1/report", payload)
        if not isinstance(answer, dict) or "tasks" not in answer:
            raise DatabaseError(f"{server} answered a report without sections: is it an older tracescore?")
        return Report.from_dict(answer), server
    connection = _connect(args.db, write=False)
    try:
        scored = _scored(connection, specs, task_id=args.task, window=window)
        verdicts = [s.verdict() for s in scored]
        report = build_report(
            connection,
            specs,
            verdicts,
            task=args.task,
            k=args.k,
            include=include,
            history_bucket=args.history_bucket,
            windowed=not window.everything,
        )
    finally:
        connection.close()
    return report, str(args.db)


def _write(path: Path, text: str) -> None:
    """Atomically: a reader never sees half a page."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text)
        temporary.replace(path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise UserError(f"--output {path}: {exc.strerror}") from exc


def run_report(
    args: argparse.Namespace,
    report_from: ReportSource | None = None,
    explain_from: gate.Explain | None = None,
) -> int:
    if args.k is not None and args.k < 1:
        raise UserError("--k must be 1 or more")
    try:
        # The page always has every section; the table and JSON only those asked for (--include), so
        # `report --format json` stays the plain array of task results that `diff` reads.
        include = sections(args.include or (["all"] if args.format == "html" else []))
    except ReportError as exc:
        raise UserError(f"--include: {exc}") from exc
    specs = load_specs(args.spec)
    gate.wait_for_runs(args)
    try:
        report, source = (report_from or _report)(args, specs, include)
    except ReportError as exc:
        raise UserError(str(exc)) from exc
    empty = None if report.tasks else gate.explained(args, specs, explain_from or _explain)
    if args.format == "html":
        text = report_html(report, source=source, trace_url=args.trace_url)
    elif args.format == "json":
        text = report_json(report) if include else tasks_json(report.tasks)
    else:
        text = report_text(report)
    if args.output is not None:
        _write(args.output, text if text.endswith("\n") else text + "\n")
        print(f"tracescore: wrote {args.output} ({len(text.encode()) // 1024 + 1} KiB)", file=sys.stderr)
    else:
        print(text, end="" if text.endswith("\n") else "\n")
    return EXIT_OK if empty is None else gate.nothing_scored(args, empty)


def run_sql(args: argparse.Namespace) -> int:
    server = client.discover(args.db, args.server)
    if server is not None:
        answer = client.post(server, "/api/v1/sql", {"query": args.query})
        columns, rows = answer["columns"], [tuple(r) for r in answer["rows"]]
        if answer.get("truncated"):  # on stderr: the rows printed are the server's first ones only
            print(
                f"tracescore sql: the server answers at most {len(rows):,} rows; these are the first. "
                "Add a WHERE or LIMIT, or stop the server to read the file whole",
                file=sys.stderr,
            )
    else:
        columns, rows = query_file(args.db, args.query)
    text, cut = render_rows(columns, rows, args.format, args.max_width)
    print(text)
    if cut:  # on stderr: a piped table stays the table
        print(
            f"tracescore sql: {cut} value(s) cut at {args.max_width} characters (ending in …); "
            "--format json or --format csv prints every value whole, --max-width N widens the table "
            "(0: no limit)",
            file=sys.stderr,
        )
    return EXIT_OK


# `watch` when the server ends the stream before --count verdicts or --timeout: the server stopped (or
# restarted), which is not a verdict on the runs; sysexits' EX_UNAVAILABLE (docs/online.md).
EXIT_SERVER_CLOSED = 69


def run_watch(args: argparse.Namespace) -> int:
    """Print verdicts as they arrive; with --count, stop after that many (exit 1 if any failed)."""
    server = client.discover(args.db, args.server)
    if server is None:
        raise DatabaseError(
            f"no running tracescore server holds {args.db}; start "
            f"`tracescore serve --db {args.db} --specs …` or pass --server URL"
        )
    query = {"spec": args.spec or "", "run": args.run or "", "existing": "true" if args.existing else ""}
    path = "/api/v1/verdicts/watch?" + urllib.parse.urlencode({k: v for k, v in query.items() if v})
    seen: list[Verdict] = []
    deadline = time.monotonic() + args.timeout if args.timeout else None
    try:
        for data in client.stream(server, path, timeout_s=args.timeout):
            verdict = verdict_from_dict({k: v for k, v in data.items() if k != "scored_at"})
            seen.append(verdict)
            if args.format == "json":
                print(json.dumps(data), flush=True)
            else:
                value = verdict_value(verdict)
                print(
                    f"{verdict.label.upper():<5} {verdict.spec:<24} run {verdict.run_id} "
                    f"(v{verdict.run_version}) value {value}  {verdict.reason or ''}".rstrip(),
                    flush=True,
                )
            if args.count and len(seen) >= args.count:
                break
            if deadline is not None and time.monotonic() > deadline:
                break
        else:  # the stream ended from the server's side
            return _server_closed(server, seen)
    except TimeoutError:
        print(f"tracescore: no verdict within {args.timeout:g} s", file=sys.stderr)
        return EXIT_FAILED
    except (http.client.HTTPException, ConnectionError):  # the server went away mid-stream
        return _server_closed(server, seen)
    if args.count and len(seen) < args.count:
        return EXIT_FAILED
    return EXIT_OK if all(v.label == "pass" for v in seen) else EXIT_FAILED


def _server_closed(server: str, seen: list[Verdict]) -> int:
    print(
        f"tracescore: the server at {server} closed the stream (it stopped or restarted) after "
        f"{len(seen)} verdict(s)",
        file=sys.stderr,
    )
    return EXIT_SERVER_CLOSED


def run_diff(args: argparse.Namespace) -> int:
    deltas = diff(
        load_results(args.before),
        load_results(args.after),
        allow_spec_change=args.allow_spec_change,
        alpha=args.alpha,
        k=args.k,
        adjust=args.adjust,
    )
    if args.format == "json":
        print(json.dumps([d.to_dict() for d in deltas], indent=2))
    else:
        labels = {"before": str(args.before), "after": str(args.after)}
        print(deltas_text(deltas, alpha=args.alpha, adjust=args.adjust, **labels))
    return EXIT_FAILED if gate_fails(deltas, args.fail_on) else EXIT_OK

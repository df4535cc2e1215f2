"""The `tracescore` command: each subcommand's run, and `main`, the console script's entry point.

A user's mistake prints one clear line and exits non-zero, no traceback. The arguments are declared in
collector/cli/_parser.py."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from collector.cli._client import ServerError
from collector.cli._errors import UserError
from collector.cli._logging import json_logs, setup_logging, status_line
from collector.cli._parser import build_parser
from collector.cli._serve_status import serve_with_status, stored_summary
from collector.clickhouse.connection import ClickHouseError
from collector.recognise.declared.errors import ConventionsError
from collector.serve.server import BindError, PluginError, serve
from collector.serve.settings import (
    SERVE_SETTINGS,
    SettingError,
    resolve_serve_settings,
)
from collector.store.database import DatabaseError
from collector.store.sql import SqlRefused
from scoring import DiffError, SpecError

EXIT_USAGE = 2


def _run_serve(args: argparse.Namespace) -> int:
    flags = {s.name: getattr(args, s.name, None) for s in SERVE_SETTINGS}
    for name in ("specs", "conventions", "plugins"):
        given = flags.get(name)
        flags[name] = tuple(given) if given else None
    settings = replace(
        resolve_serve_settings(flags, config=args.config), accept_wal_loss=args.accept_wal_loss
    )
    setup_logging(settings.log_format, settings.log_level)
    if settings.config_file is not None:
        logging.getLogger("tracescore.serve").info("settings read from %s", settings.config_file)
    status = status_line()
    if status is None:
        asyncio.run(serve(settings))
        return 0
    asyncio.run(serve_with_status(serve, settings, status))
    summary = stored_summary(settings.db)
    if summary is not None:
        print(summary, file=status.stream)
    return 0


def _run_demo(args: argparse.Namespace) -> int:
    if args.endpoint:  # the demo's agent only, to the user's own serve
        from collector.cli._demo_send import SendError, send_demo

        try:
            return send_demo(args.endpoint, args.protocol, args.db.with_name(args.db.stem + "-specs.yaml"))
        except SendError as exc:
            print(f"tracescore: {exc}", file=sys.stderr)
            return EXIT_USAGE
    from collector.cli._demo import run_demo

    return run_demo(args.db, resolve_serve_settings({}))


def _run_export(args: argparse.Namespace) -> int:
    """From the file, or, while a server holds it, from the server: it reads, this process writes."""
    import duckdb
    import pyarrow as pa

    from collector.cli._client import arrow_stream, discover
    from collector.store.export import export, export_rows

    server = discover(args.db, args.server)
    if server is None:
        result = export(args.db, args.out, args.since, args.until)
    else:
        window = {"since": _iso(args.since), "until": _iso(args.until)}
        try:
            result = export_rows(
                args.out, lambda table: arrow_stream(server, "/api/v1/export", {"table": table, **window})
            )
        except (pa.ArrowInvalid, OSError, duckdb.Error) as exc:  # the stream broke off: nothing published
            raise ServerError(
                f"{server}: the export stream ended early ({exc}); nothing was written"
            ) from exc
    print(
        f"exported {result.spans} spans and {result.scores} verdicts in {len(result.files)} file(s) "
        f"under {args.out}"
    )
    return 0


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _run_doctor(args: argparse.Namespace) -> int:
    from collector.cli._doctor import run_doctor

    flags = {
        "db": args.db,
        "grpc": args.grpc,
        "http": args.http,
        "specs": tuple(args.specs) if args.specs else None,
        "conventions": tuple(args.conventions) if args.conventions else None,
    }
    return run_doctor(resolve_serve_settings(flags, config=args.config))


def _run_check(args: argparse.Namespace) -> int:
    from collector.cli import _scoring_commands as commands
    from collector.cli._check import run_check

    return run_check(args, lambda path: commands._connect(path, write=False))


# The scoring commands are imported when one runs: with them come the spec models (pydantic, jsonschema,
# RE2), which a server given no spec never needs (issue 33).
def _run_score(args: argparse.Namespace) -> int:
    from collector.cli._clickhouse_commands import run_score

    return run_score(args)


def _run_report(args: argparse.Namespace) -> int:
    from collector.cli._clickhouse_commands import run_report

    return run_report(args)


def _run_diff(args: argparse.Namespace) -> int:
    from collector.cli._scoring_commands import run_diff

    return run_diff(args)


def _run_sql(args: argparse.Namespace) -> int:
    from collector.cli._scoring_commands import run_sql

    return run_sql(args)


def _run_watch(args: argparse.Namespace) -> int:
    from collector.cli._scoring_commands import run_watch

    return run_watch(args)


def _run_compare(args: argparse.Namespace) -> int:
    from collector.cli._compare import run_compare

    return run_compare(args)


def _run_spec(args: argparse.Namespace) -> int:
    from collector.cli._spec_draft import run_spec

    return run_spec(args)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": _run_check,
    "spec": _run_spec,
    "doctor": _run_doctor,
    "export": _run_export,
    "demo": _run_demo,
    "serve": _run_serve,
    "score": _run_score,
    "report": _run_report,
    "diff": _run_diff,
    "compare": _run_compare,
    "sql": _run_sql,
    "watch": _run_watch,
}

USER_ERRORS = (
    SettingError,
    DatabaseError,
    BindError,
    PluginError,
    SqlRefused,
    UserError,
    ClickHouseError,
    SpecError,
    ConventionsError,
    DiffError,
    ServerError,
)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Readable on a terminal, JSON lines elsewhere; serve sets it again from its own settings.
    setup_logging("auto", "info" if args.command == "serve" else "warning")
    try:
        return COMMANDS[args.command](args)
    except USER_ERRORS as exc:
        if args.command == "serve" and json_logs():  # a log pipeline reads serve's stderr: stay JSON
            logging.getLogger("tracescore").error("tracescore: %s", exc)
        else:
            print(f"tracescore: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader (e.g. `| head`) went away: not an error of ours
        sys.stderr.close()
        return 0

"""The `tracescore` command. A user's mistake prints one clear line and exits non-zero, no traceback."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from collector._database import DatabaseError
from collector._server import BindError, serve
from collector._settings import SERVE_SETTINGS, SettingError, parse_address, resolve_serve_settings
from collector._sql import SqlRefused, format_rows, query_file

EXIT_USAGE = 2


class UserError(Exception):
    pass


def _address(text: str) -> object:
    try:
        return parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    env = {s.name: s.env for s in SERVE_SETTINGS}
    p = sub.add_parser(
        "serve",
        help="run the sidecar: receive OTLP, store tool executions in DuckDB",
        description="Receive OTLP traces over gRPC and HTTP, recognise tool executions, store them in "
        "DuckDB. Every option can also be set by the environment variable shown; flags win.",
    )
    p.add_argument("--db", type=Path, help=f"DuckDB file (default tracescore.duckdb; {env['db']})")
    p.add_argument("--grpc", type=_address, help=f"OTLP/gRPC address (default 127.0.0.1:4317; {env['grpc']})")
    p.add_argument("--http", type=_address, help=f"OTLP/HTTP address (default 127.0.0.1:4318; {env['http']})")
    p.add_argument(
        "--grace-seconds",
        dest="grace_seconds",
        type=float,
        help=f"run completion grace period (default 2; {env['grace_seconds']})",
    )
    p.add_argument(
        "--idle-timeout-seconds",
        dest="idle_timeout_seconds",
        type=float,
        help=f"completion of traces with no root span (default 30; {env['idle_timeout_seconds']})",
    )
    p.add_argument(
        "--max-request-mib",
        dest="max_request_mib",
        type=int,
        help=f"request size limit after decompression (default 64; {env['max_request_mib']})",
    )
    p.add_argument(
        "--max-backlog-spans",
        dest="max_backlog_spans",
        type=int,
        help=f"back-pressure threshold (default 200000; {env['max_backlog_spans']})",
    )
    p.add_argument("--memory-limit", dest="memory_limit", help=f"DuckDB memory_limit ({env['memory_limit']})")
    p.add_argument(
        "--allow-remote",
        dest="allow_remote",
        action="store_true",
        default=None,
        help=f"allow non-loopback listen addresses ({env['allow_remote']})",
    )


def _sql_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("sql", help="run one read-only SQL query over the stored tables")
    p.add_argument("--db", type=Path, default=Path("tracescore.duckdb"), help="DuckDB file")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("query", help='for example "SELECT tool_name, count(*) FROM executions GROUP BY 1"')


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracescore", description="Score AI agents by what their tools did, from OpenTelemetry traces."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    _sql_parser(sub)
    return parser


def _run_serve(args: argparse.Namespace) -> int:
    flags = {s.name: getattr(args, s.name, None) for s in SERVE_SETTINGS}
    settings = resolve_serve_settings(flags)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve(settings))
    return 0


def _run_sql(args: argparse.Namespace) -> int:
    columns, rows = query_file(args.db, args.query)
    print(format_rows(columns, rows, args.format))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _run_serve(args)
        if args.command == "sql":
            return _run_sql(args)
    except (SettingError, DatabaseError, BindError, SqlRefused, UserError) as exc:
        print(f"tracescore: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

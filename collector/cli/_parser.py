"""Every `tracescore` subcommand's arguments, declared once: docs/cli.md is generated from this parser
(collector/cli/_reference.py), and the settings of `serve` come from collector/serve/settings.py, so a
flag, its environment variable and its default never disagree.

Why this module is long: it is the one declaration of the flags of every subcommand, several lines a
flag (name, type, help with its variable and default); `serve`'s alone are some forty. The ClickHouse
flags, shared by three commands, are in collector/cli/_parser_clickhouse.py."""

from __future__ import annotations

import argparse
import importlib.metadata
from pathlib import Path
from typing import TYPE_CHECKING

from collector.cli import _parser_ci as ci
from collector.cli._parser_clickhouse import clickhouse_arguments, iso_time
from collector.cli._parser_compare import compare_parser, diff_parser
from collector.cli._parser_demo import demo_parser
from collector.cli._parser_links import _template as trace_url_template
from collector.cli._parser_links import trace_url_argument
from collector.cli._parser_selection import selection_arguments
from collector.cli._parser_spec import spec_parser
from collector.serve.settings import (
    CONFIG_ENV,
    LOG_FORMATS,
    LOG_LEVELS,
    SERVE_SETTINGS,
    parse_address,
    parse_memory_limit,
    parse_workers,
)
from collector.store.sql import DEFAULT_MAX_WIDTH
from scoring.report.build import BUCKETS, SECTIONS

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _address(text: str) -> object:
    try:
        return parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _memory_limit(text: str) -> str:
    try:
        return parse_memory_limit(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _workers(text: str) -> int:
    try:
        return parse_workers(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _serve_parser(sub: Subparsers) -> None:
    env = {s.name: s.env for s in SERVE_SETTINGS}
    p = sub.add_parser(
        "serve",
        help="run the sidecar: receive OTLP, store tool executions, score completed runs online",
        description="Receive OTLP traces over gRPC and HTTP, recognise tool executions, store them in "
        "DuckDB, and score every completed run against --specs. Every option can also be set by the "
        "environment variable shown, or by its name as a key in a YAML file (--config): flags win over "
        "the environment, which wins over the file (docs/configuration.md).",
    )
    _config_argument(p)
    p.add_argument("--db", type=Path, help=f"DuckDB file (default tracescore.duckdb; {env['db']})")
    p.add_argument(
        "--grpc",
        type=_address,
        help=f"OTLP/gRPC and gRPC API address (default 127.0.0.1:4317; {env['grpc']})",
    )
    p.add_argument(
        "--http",
        type=_address,
        help=f"OTLP/HTTP and HTTP API address (default 127.0.0.1:4318; {env['http']})",
    )
    p.add_argument(
        "--specs",
        type=Path,
        nargs="+",
        action="extend",
        help=f"spec files or directories to score every completed run against; reloaded on change "
        f"({env['specs']})",
    )
    p.add_argument(
        "--conventions",
        type=Path,
        nargs="+",
        action="extend",
        metavar="FILE",
        help="conventions files teaching tracescore your own tool span format, tried before the built-in "
        f"ones (docs/conventions.md); reloaded on change ({env['conventions']})",
    )
    p.add_argument(
        "--plugin",
        dest="plugins",
        action="append",
        help=f"Python module to import first; it may register checks ({env['plugins']})",
    )
    p.add_argument(
        "--export-endpoint",
        dest="export_endpoint",
        help="send verdicts as OTLP spans and metrics here (default: OTEL_EXPORTER_OTLP_ENDPOINT if "
        f"set; {env['export_endpoint']})",
    )
    p.add_argument(
        "--export-protocol",
        dest="export_protocol",
        choices=("grpc", "http/protobuf"),
        help=f"protocol for --export-endpoint ({env['export_protocol']})",
    )
    p.add_argument(
        "--export-dir",
        dest="export_dir",
        type=Path,
        help="export the spans and verdicts of completed runs here as Parquet while serving, each row "
        f"once, resuming after a crash (docs/export.md; {env['export_dir']})",
    )
    p.add_argument(
        "--export-every",
        dest="export_every",
        type=ci.positive_seconds,
        metavar="SECONDS",
        help=f"seconds between exports to --export-dir (default 300; {env['export_every']})",
    )
    p.add_argument(
        "--trace-url",
        dest="trace_url",
        type=trace_url_template,
        metavar="TEMPLATE",
        help="link each run's trace in the live UI to your tracing UI: a URL with {trace_id}, e.g. "
        f"'https://jaeger.example/trace/{{trace_id}}' (docs/ui.md; {env['trace_url']})",
    )
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
    p.add_argument(
        "--retry-after-seconds",
        dest="retry_after_seconds",
        type=int,
        help=f"back-off asked of clients on overload (default 1; {env['retry_after_seconds']})",
    )
    p.add_argument(
        "--http-header-timeout-seconds",
        dest="http_header_timeout_seconds",
        type=ci.positive_seconds,
        metavar="SECONDS",
        help="close an OTLP/HTTP connection left this long without a complete request head "
        f"(default 60; {env['http_header_timeout_seconds']})",
    )
    p.add_argument(
        "--http-body-timeout-seconds",
        dest="http_body_timeout_seconds",
        type=ci.positive_seconds,
        metavar="SECONDS",
        help=f"answer 408 to an OTLP/HTTP body not received in this time (default 60; "
        f"{env['http_body_timeout_seconds']})",
    )
    p.add_argument(
        "--decode-workers",
        dest="decode_workers",
        type=_workers,
        metavar="N|auto",
        help="processes decoding OTLP requests beside the server; 0 decodes in the server's process "
        f"(default auto: one per core beyond the first, at most 4; {env['decode_workers']})",
    )
    p.add_argument(
        "--memory-limit",
        dest="memory_limit",
        type=_memory_limit,
        metavar="SIZE",
        help=(
            "memory budget, e.g. 384MiB (default: the container's limit); it chooses the mode: decode "
            "workers only where they fit, DuckDB 40 %% of what is left (at least 96 MiB); over 90 %% "
            f"new requests are refused, retryably ({env['memory_limit']})"
        ),
    )
    p.add_argument(
        "--auth-token",
        dest="auth_token",
        help=f"bearer token required on OTLP and the APIs ({env['auth_token']}; prefer the file)",
    )
    p.add_argument(
        "--auth-token-file",
        dest="auth_token_file",
        type=Path,
        help=f"file holding the bearer token ({env['auth_token_file']})",
    )
    p.add_argument("--tls-cert", dest="tls_cert", type=Path, help=f"TLS certificate, PEM ({env['tls_cert']})")
    p.add_argument("--tls-key", dest="tls_key", type=Path, help=f"TLS private key, PEM ({env['tls_key']})")
    p.add_argument(
        "--tls-client-ca",
        dest="tls_client_ca",
        type=Path,
        help=f"require client certificates from this CA, PEM (mTLS; {env['tls_client_ca']})",
    )
    p.add_argument(
        "--allowed-hosts",
        dest="allowed_hosts",
        type=lambda t: tuple(h for h in t.split(",") if h),
        help=f"Host header values the API answers besides loopback (comma-separated; * any; "
        f"{env['allowed_hosts']})",
    )
    p.add_argument(
        "--insecure-listen",
        dest="insecure_listen",
        action="store_true",
        default=None,
        help="allow a non-loopback address without TLS and a token; logs a warning "
        f"({env['insecure_listen']})",
    )
    p.add_argument(
        "--log-format",
        dest="log_format",
        choices=LOG_FORMATS,
        help="auto (default): readable lines and a live status line on a terminal, JSON lines otherwise "
        f"({env['log_format']})",
    )
    p.add_argument(
        "--log-level", dest="log_level", choices=LOG_LEVELS, help=f"default info ({env['log_level']})"
    )
    p.add_argument(
        "--accept-wal-loss",
        dest="accept_wal_loss",
        action="store_true",
        help="start although the database and its write-ahead log lack spans that were acknowledged "
        "(a damaged log: serve refuses to start otherwise, exit 2); logs how many are lost. This start "
        "only: no variable, no file key (docs/reliability.md, promise 10)",
    )


def _config_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        type=Path,
        help=f"YAML file of settings (keys as the serve options, e.g. grace_seconds: 2; {CONFIG_ENV})",
    )


def _data_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        type=Path,
        default=Path("tracescore.duckdb"),
        help="DuckDB file; when a running serve holds it, its API is used instead",
    )
    p.add_argument("--server", help="a running tracescore's HTTP API, e.g. http://127.0.0.1:4318")


def _score_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "score",
        help=f"score complete runs against specs; {ci.EXIT_CODES}",
    )
    _data_arguments(p)
    p.add_argument(
        "--spec",
        type=Path,
        action="append",
        required=True,
        help="spec file (one spec or a list) or directory; repeatable",
    )
    p.add_argument("--run", help="score only this run id")
    p.add_argument("--task", help="score only the runs of this task id")
    p.add_argument("--format", choices=ci.SCORE_FORMATS, default="table", help=ci.SCORE_FORMAT_HELP)
    p.add_argument("--no-store", action="store_true", help="do not write the verdicts to the database")
    selection_arguments(p)
    ci.gate_arguments(p)
    trace_url_argument(p, "a TRACE URL column in the table")
    clickhouse_arguments(p, score=True)


def _report_parser(sub: Subparsers) -> None:
    p = sub.add_parser("report", help=ci.REPORT_HELP)
    _data_arguments(p)
    p.add_argument(
        "--spec", type=Path, action="append", required=True, help="spec file or directory; repeatable"
    )
    p.add_argument("--task", help="only this task id")
    p.add_argument("--k", type=int, help="k for pass@k and pass^k (default: each task's number of rollouts)")
    p.add_argument(
        "--format",
        choices=("table", "json", "html"),
        default="table",
        help="html: a self-contained page with every section",
    )
    p.add_argument(
        "--include",
        action="append",
        metavar="SECTION",
        help=f"add sections to the table or JSON: {', '.join(SECTIONS)} or all (comma-separated or "
        "repeated); JSON becomes an object {tasks, history, tool_latency, failing_runs}",
    )
    p.add_argument(
        "--history-bucket",
        choices=("auto", *BUCKETS),
        default="auto",
        help="time bucket of the pass-rate history (default auto: the finest with at most 60 per spec)",
    )
    p.add_argument("--output", "-o", type=Path, help="write to this file instead of stdout")
    selection_arguments(p)
    ci.gate_arguments(p)
    trace_url_argument(p, "the HTML page's trace ids become links")
    clickhouse_arguments(p, score=False)


def _sql_parser(sub: Subparsers) -> None:
    p = sub.add_parser("sql", help="run one read-only SQL query over the stored tables")
    _data_arguments(p)
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument(
        "--max-width",
        type=_max_width,
        default=DEFAULT_MAX_WIDTH,
        metavar="N",
        help=f"cut table cells at N characters, marked … (default {DEFAULT_MAX_WIDTH}; 0: no limit); "
        "json and csv are never cut",
    )
    p.add_argument("query", help='for example "SELECT tool_name, count(*) FROM executions GROUP BY 1"')


def _max_width(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a number of characters, 0 or more (0: no limit), got {text!r}"
        )
    return value


def _watch_parser(sub: Subparsers) -> None:
    p = sub.add_parser("watch", help="print verdicts from a running server as they arrive")
    _data_arguments(p)
    p.add_argument("--spec", help="only this spec")
    p.add_argument("--run", help="only this run")
    p.add_argument("--existing", action="store_true", help="first print the stored verdicts that match")
    p.add_argument("--count", type=int, help="stop after this many verdicts (exit 1 if any failed)")
    p.add_argument("--timeout", type=float, help="give up after this many seconds without a verdict")
    p.add_argument("--format", choices=("table", "json"), default="table")


def _export_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "export", help="write spans and verdicts as hive-partitioned Parquet (ClickHouse otel_traces columns)"
    )
    p.add_argument(
        "--db",
        type=Path,
        default=Path("tracescore.duckdb"),
        help="DuckDB file; while a serve holds it, that server reads the rows and this command writes them",
    )
    p.add_argument(
        "--out", type=Path, required=True, help="directory; otel_traces/ and scores/ are added to it"
    )
    p.add_argument("--server", help="a running tracescore's HTTP API, e.g. http://127.0.0.1:4318")
    p.add_argument("--since", type=iso_time, help="only spans that started at or after this time (ISO 8601)")
    p.add_argument("--until", type=iso_time, help="only spans that started before this time (ISO 8601)")


def _doctor_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "doctor", help="check ports, the database lock, WAL state, disk and specs; say what to fix"
    )
    p.add_argument("--db", type=Path, help="DuckDB file (default tracescore.duckdb)")
    p.add_argument("--grpc", type=_address, help="OTLP/gRPC address to check (default 127.0.0.1:4317)")
    p.add_argument("--http", type=_address, help="OTLP/HTTP address to check (default 127.0.0.1:4318)")
    p.add_argument(
        "--specs", type=Path, nargs="+", action="extend", help="spec files or directories to check"
    )
    p.add_argument(
        "--conventions",
        type=Path,
        nargs="+",
        action="extend",
        metavar="FILE",
        help="conventions files to check",
    )
    _config_argument(p)


def _version() -> str:
    try:
        return importlib.metadata.version("tracescore")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracescore", description="Score AI agents by what their tools did, from OpenTelemetry traces."
    )
    parser.add_argument("--version", action="version", version=f"tracescore {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (
        demo_parser,
        _serve_parser,
        _score_parser,
        _report_parser,
        diff_parser,
        compare_parser,
        _sql_parser,
        _watch_parser,
        _export_parser,
        _doctor_parser,
        ci.check_parser,
        spec_parser,
    ):
        add(sub)
    return parser

"""The flags that choose runs (`--since`, `--until`, `--where`), the same for `score`, `report` and
`compare` whichever store they read: the file, a running serve, or ClickHouse (scoring/spec/window.py
says what each compares)."""

from __future__ import annotations

import argparse

from collector.cli._parser_clickhouse import iso_time
from scoring.spec.window import parse_where


def _where(text: str) -> tuple[str, str]:
    try:
        return parse_where(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def selection_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("choosing runs (with --db, --server or --clickhouse alike)")
    g.add_argument(
        "--since",
        type=iso_time,
        help="only runs that started at or after this time (ISO 8601; UTC unless it has an offset); "
        "from ClickHouse, traces whose first span did",
    )
    g.add_argument("--until", type=iso_time, help="only runs that started before this time")
    g.add_argument(
        "--where",
        type=_where,
        action="append",
        metavar="KEY=VALUE",
        help="only runs whose KEY equals VALUE, compared as a spec's select: a resource or root-span "
        "attribute (service.version, deployment.environment, a git sha) or task, agent, session, run, "
        "service.name; repeatable: one key again means any of its values, different keys must all match",
    )

"""The arguments of `tracescore demo`: its own sidecar by default, or (`--endpoint`) only its agent,
sending to a `serve` of one's own. Kept apart from collector/cli/_parser.py, which holds the other
subcommands'."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def demo_parser(sub: Subparsers) -> None:
    p = sub.add_parser("demo", help="the sidecar, a scripted agent and online scoring, end to end")
    p.add_argument(
        "--db",
        type=Path,
        default=Path("tracescore-demo.duckdb"),
        help="demo database file (rebuilt on each run); its specs are written beside it as NAME-specs.yaml",
    )
    p.add_argument(
        "--endpoint",
        metavar="URL",
        help="send the demo agent's runs to your own `tracescore serve` at this OTLP endpoint (e.g. "
        "http://127.0.0.1:4318) instead of starting a sidecar; its specs are written as NAME-specs.yaml",
    )
    p.add_argument(
        "--protocol",
        choices=("http/protobuf", "grpc"),
        default="http/protobuf",
        help="OTLP protocol for --endpoint (default http/protobuf; grpc for serve's 4317)",
    )

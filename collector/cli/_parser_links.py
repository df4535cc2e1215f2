"""`--trace-url`: where each run's trace opens in the user's tracing UI (issue 30), for `score`'s table
and the HTML report. Kept apart from collector/cli/_parser.py, which holds the subcommands."""

from __future__ import annotations

import argparse

PLACEHOLDER = "{trace_id}"


def _template(text: str) -> str:
    if PLACEHOLDER not in text:
        raise argparse.ArgumentTypeError(
            f"expected a URL with {PLACEHOLDER} where the trace id goes, e.g. "
            f"'https://tracing.example/trace/{PLACEHOLDER}', got {text!r}"
        )
    return text


def trace_url_argument(p: argparse.ArgumentParser, where: str) -> None:
    p.add_argument(
        "--trace-url",
        type=_template,
        metavar="TEMPLATE",
        help=f"link each run's trace to your tracing UI: a URL with {PLACEHOLDER}, e.g. "
        f"'https://jaeger.example/trace/{PLACEHOLDER}' ({where})",
    )

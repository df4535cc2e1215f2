"""The CLI reference in docs/cli.md, generated from the parser itself so it cannot drift
(`python -m collector.cli._reference > docs/cli.md`; tests/test_docs.py compares)."""

from __future__ import annotations

import argparse
import os

from collector.cli._parser import build_parser

_WIDTH = "100"  # argparse wraps to the terminal: a fixed width keeps the page reproducible


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(actions[0].choices.items()) if actions else []


def render() -> str:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = _WIDTH
    try:
        parser = build_parser()
        parts = [
            "# CLI reference\n",
            "Generated from `tracescore --help` by `python -m collector.cli._reference > docs/cli.md`; "
            "a test fails when this page and the CLI disagree.\n",
            "```\n" + parser.format_help() + "```\n",
        ]
        for name, sub in _subcommands(parser):
            parts.append(f"## tracescore {name}\n")
            parts.append("```\n" + sub.format_help() + "```\n")
            # A command of commands (`spec draft`): each of its own, under its full name.
            for inner, command in _subcommands(sub):
                parts.append(f"### tracescore {name} {inner}\n")
                parts.append("```\n" + command.format_help() + "```\n")
        return "\n".join(parts)
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


if __name__ == "__main__":
    print(render(), end="")

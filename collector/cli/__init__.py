"""The `tracescore` command."""

from collector.cli._main import main

__all__ = ["main"]

"""Running a user's pytest file with the plugin, as installing tracescore would load it."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

PLUGIN = "collector.testing.pytest_plugin"


def plugin_args() -> list[str]:
    """`-p` the plugin unless the installed distribution's `pytest11` entry point loads it already (an
    editable install made before the entry point existed does not)."""
    installed = any(e.value == PLUGIN for e in entry_points(group="pytest11"))
    return [] if installed else ["-p", PLUGIN]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*plugin_args(), "-p", "no:cacheprovider", *args)

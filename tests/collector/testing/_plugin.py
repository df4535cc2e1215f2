"""Running a user's pytest file with the plugin, as installing tracescore is enough to load it.

In a child process, as a user's `pytest` runs: pytester's in-process runs drop from `sys.modules` what
each run imported first, and the next run's second copy of the OpenTelemetry SDK or of an instrumented
framework is not the first one the global tracer provider and the instrumentors were made with.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

import pytest

PLUGIN = "collector.testing.pytest_plugin"
ROOT = Path(__file__).resolve().parents[3]


def plugin_args() -> list[str]:
    """`-p` the plugin unless the installed distribution's `pytest11` entry point loads it already (an
    editable install made before the entry point existed does not)."""
    installed = any(e.value == PLUGIN for e in entry_points(group="pytest11"))
    return [] if installed else ["-p", PLUGIN]


def preload(*modules: str) -> None:
    """Skip unless what a user file imports is installed."""
    for module in modules:
        pytest.importorskip(module)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # The user files import the test agent (tests/collector/testing/_agent.py) from this checkout.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        return pytester.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", *args, timeout=120)

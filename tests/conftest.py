from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._server import ServeProcess

# `pytester` runs a user's test file with tracescore's pytest plugin (tests/collector/testing/).
pytest_plugins = ["pytester"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProcess]:
    """A running `tracescore serve` on free loopback ports with a fresh database file."""
    process = ServeProcess(db=tmp_path / "traces.duckdb").start()
    try:
        yield process
    finally:
        process.kill()

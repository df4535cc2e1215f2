"""The live matrix: every cell's driver runs its real framework, in the cell's own virtualenv, against a
real `tracescore serve --specs`, and the stored rows and verdicts are held to the same rules as the
recordings (tests/frameworks/_cells.py).

The virtualenvs are built from tests/frameworks/requirements/ (every version pinned) on first use and
kept outside the clone, so a framework upgrade is a changed pin and a new virtualenv. Building them all
needs the package registry and a few minutes, so this runs when asked: `make test-frameworks` (which
.ci/run does) sets TRACESCORE_LIVE_FRAMEWORKS=1; `make test` checks the recordings instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._server import ServeProcess
from tests.frameworks._cells import Truth, problems, specs_for
from tests.frameworks.matrix import CELLS, Cell
from tests.frameworks.record import run_driver

pytestmark = pytest.mark.skipif(
    os.environ.get("TRACESCORE_LIVE_FRAMEWORKS") != "1",
    reason="the live matrix runs with TRACESCORE_LIVE_FRAMEWORKS=1 (make test-frameworks)",
)


@pytest.mark.timeout(900)  # the first run of a cell builds its virtualenv
@pytest.mark.parametrize(
    "cell",
    [
        pytest.param(
            c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=c.known_gap)] if c.known_gap else []
        )
        for c in CELLS
    ],
)
def test_the_live_cell_is_read_exactly(cell: Cell, tmp_path: Path) -> None:
    recorded = tmp_path / "recorded"
    # The specs come from the committed recording (the live run plays the same scenario); the rows are
    # held to what the tools received in this live run.
    truth = Truth.load(cell.fixture / "calls.json")
    specs = tmp_path / "specs.yaml"
    specs.write_text(specs_for(truth))
    server = ServeProcess(tmp_path / "live.duckdb", extra_args=("--specs", str(specs))).start()
    try:
        run_driver(cell, server, recorded)
    finally:
        assert server.stop() == 0, server.log()
    assert problems(server.db, Truth.load(recorded / "calls.json")) == []

"""Recognition on every framework's recorded traces, without installing a single framework.

Each fixture folder holds what a driver really exported (otlp.jsonl, recorded by
`python -m tests.frameworks.record`) and what its tools really received (calls.json). Every recording
is sent, request by request as it was exported, to one real `tracescore serve --specs` over OTLP/HTTP
JSON; the server is stopped (which completes and scores every run), and each cell's rows and verdicts
are held to tests/frameworks/_cells.py's rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.frameworks._cells import TABLE_END, TABLE_START, Truth, findings, problems, table
from tests.frameworks.matrix import CELLS, FIXTURES, ROOT
from tests.frameworks.table import replay

RECORDED = sorted(cell.fixture for cell in CELLS)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    db, _ = replay(tmp_path_factory.mktemp("recorded"))
    yield db


def test_every_cell_has_a_recording() -> None:
    assert RECORDED, "no recorded framework traces under tests/frameworks/fixtures"


def _with_known_gaps(cells: list[Path]) -> list[Any]:
    """A cell with a known gap is expected to fail, strictly: once it passes, its gap must go."""
    gaps = {c.name: c.known_gap for c in CELLS}
    params = []
    for cell in cells:
        gap = gaps.get(cell.name)
        marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
        params.append(pytest.param(cell, id=cell.name, marks=marks))
    return params


@pytest.mark.parametrize("cell", _with_known_gaps(RECORDED))
def test_the_recorded_cell_is_read_exactly(stored: Path, cell: Path) -> None:
    truth = Truth.load(cell / "calls.json")
    assert problems(stored, truth) == []


def test_every_recording_is_a_cell_of_the_matrix_and_every_cell_is_recorded() -> None:
    recordings = sorted(p.parent.name for p in FIXTURES.glob("*/calls.json"))
    assert recordings == sorted(c.name for c in CELLS)


def test_the_integrations_table_is_what_the_recordings_show(stored: Path) -> None:
    """docs/integrations.md's compatibility table is generated from these very results: rerun
    `python -m tests.frameworks.table` after recording, or after recognition changes."""
    page = (ROOT / "docs" / "integrations.md").read_text()
    assert TABLE_START in page and TABLE_END in page, "docs/integrations.md has lost its framework matrix"
    shown = page[page.index(TABLE_START) : page.index(TABLE_END) + len(TABLE_END)]
    rows = [(truth, findings(stored, truth)) for truth in (Truth.load(c / "calls.json") for c in RECORDED)]
    assert shown == table(rows, {c.name: c.known_gap for c in CELLS if c.known_gap}), (
        "run: python -m tests.frameworks.table"
    )

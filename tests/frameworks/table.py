"""Regenerate docs/integrations.md's compatibility table from the recorded traces:
`python -m tests.frameworks.table`. It replays every recording into a real `tracescore serve` (as
tests/frameworks/test_recorded.py does, which fails when the page and the results disagree) and
rewrites the table between its markers."""

from __future__ import annotations

import sys
import tempfile
import urllib.request
from pathlib import Path

from tests._server import ServeProcess
from tests.frameworks._cells import TABLE_END, TABLE_START, Truth, findings, specs_for, table
from tests.frameworks.matrix import CELLS, ROOT


def replay(directory: Path) -> tuple[Path, list[Path]]:
    """Every recording sent to one real server with every cell's specs; the server stopped (so every run
    is complete and scored). Returns the database and the recorded cells."""
    cells = sorted(cell.fixture for cell in CELLS)
    specs = directory / "specs.yaml"
    specs.write_text("---\n".join(specs_for(Truth.load(cell / "calls.json")) for cell in cells))
    server = ServeProcess(directory / "recorded.duckdb", extra_args=("--specs", str(specs))).start()
    try:
        for cell in cells:
            for line in (cell / "otlp.jsonl").read_bytes().splitlines():
                request = urllib.request.Request(
                    server.http_url, data=line, headers={"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(request, timeout=30) as response:
                    response.read()
    finally:
        if server.stop() != 0:
            raise RuntimeError(server.log())
    return server.db, cells


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="framework-table-") as scratch:
        db, cells = replay(Path(scratch))
        rows = [(truth, findings(db, truth)) for truth in (Truth.load(c / "calls.json") for c in cells)]
        rendered = table(rows, {c.name: c.known_gap for c in CELLS if c.known_gap})
    page_path = ROOT / "docs" / "integrations.md"
    page = page_path.read_text()
    before, after = page[: page.index(TABLE_START)], page[page.index(TABLE_END) + len(TABLE_END) :]
    page_path.write_text(before + rendered + after)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Record what each cell's framework really sends: `python -m tests.frameworks.record [CELL ...]`.

For each cell (all of them when none is named): build its virtualenv if needed, start a real
`tracescore serve` on free loopback ports, run the driver against it with `--record`, and leave
tests/frameworks/fixtures/<cell>/otlp.jsonl (the OTLP/JSON requests exactly as exported) and
calls.json (what the tools received). `make fixtures` runs it; commit the fixtures it changes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from tests._server import ServeProcess
from tests.frameworks.matrix import BY_NAME, CELLS, DRIVERS, Cell, ensure_node, ensure_venv


def run_driver(cell: Cell, server: ServeProcess, record: Path) -> None:
    if cell.runtime == "node":
        command = ["node", str(ensure_node() / cell.driver)]
    else:
        command = [str(ensure_venv(cell.requirements)), str(DRIVERS / cell.driver)]
    command += [*cell.args, "--endpoint", server.http_url]
    command += ["--record", str(record)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{cell.name}: the driver exited with {done.returncode}:\n{done.stderr[-4000:]}")


def record(cell: Cell) -> None:
    with tempfile.TemporaryDirectory(prefix=f"record-{cell.name}-") as scratch:
        server = ServeProcess(Path(scratch) / "record.duckdb").start()
        try:
            run_driver(cell, server, cell.fixture)
        finally:
            server.stop()
    print(f"{cell.name}: recorded {sum(1 for _ in (cell.fixture / 'otlp.jsonl').open())} requests")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("cells", nargs="*", metavar="CELL", help=f"one of: {', '.join(BY_NAME)}")
    names = parser.parse_args(argv).cells
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        parser.error(f"no such cell: {', '.join(unknown)}")
    for cell in [BY_NAME[n] for n in names] if names else CELLS:
        record(cell)
    return 0


if __name__ == "__main__":
    sys.exit(main())

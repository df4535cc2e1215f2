"""The README's main command: `tracescore demo` runs end to end on its own and shows real verdicts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb


def test_demo_shows_verdicts_and_pass_rates_as_runs_complete(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    result = subprocess.run(
        [sys.executable, "-m", "collector.cli", "demo", "--db", str(db)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    verdicts = [line for line in lines if line.strip().startswith("verdict")]
    assert len(verdicts) == 10
    assert sum("PASS" in line for line in verdicts) == 4
    assert any("unexpected tools not allowed: send_marketing_email" in line for line in verdicts)
    assert any("(errored)" in line for line in verdicts)
    assert any("(paused)" in line for line in verdicts)
    assert any("slower than 200 ms" in line for line in verdicts)
    assert any(line.startswith("same-day-dispatch") and "1/4" in line for line in lines)
    assert "3 in the learning zone" in result.stdout
    with duckdb.connect(str(db), read_only=True) as connection:
        stored = connection.execute("SELECT label, count(*) FROM verdicts GROUP BY 1 ORDER BY 1").fetchall()
    assert stored == [("fail", 6), ("pass", 4)]

"""The README's main command: `tracescore demo` runs end to end on its own and shows real verdicts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Demo:
    directory: Path
    result: subprocess.CompletedProcess[str]
    untracked: list[str]  # what `git status` shows in a clone after the demo ran there


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """The demo as `make demo` runs it: default arguments, from the top of a clone (here a fresh git
    repository holding the project's .gitignore)."""
    directory = tmp_path_factory.mktemp("demo")
    shutil.copy(ROOT / ".gitignore", directory / ".gitignore")
    git = shutil.which("git")
    if git is not None:
        subprocess.run([git, "init", "-q"], cwd=directory, check=True)
    result = subprocess.run(
        [sys.executable, "-m", "collector.cli", "demo"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=directory,
    )
    untracked: list[str] = []
    if git is not None:
        status = subprocess.run(
            [git, "status", "--porcelain", "--untracked-files=all"],
            cwd=directory,
            capture_output=True,
            text=True,
            check=True,
        )
        untracked = [line[3:] for line in status.stdout.splitlines()]
    return Demo(directory, result, untracked)


def test_demo_shows_verdicts_and_pass_rates_as_runs_complete(demo: Demo) -> None:
    result = demo.result
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
    with duckdb.connect(str(demo.directory / "tracescore-demo.duckdb"), read_only=True) as connection:
        stored = connection.execute("SELECT label, count(*) FROM verdicts GROUP BY 1 ORDER BY 1").fetchall()
    assert stored == [("fail", 6), ("pass", 4)]


def test_a_failing_run_of_value_one_names_the_gate_that_failed_it(demo: Demo) -> None:
    """Issue #20: `FAIL … value 1.00` read as a contradiction: strict mode is a gate, not a check."""
    verdicts = [line for line in demo.result.stdout.splitlines() if line.strip().startswith("verdict")]
    perfect_failures = [line for line in verdicts if "FAIL" in line and "value 1.00" in line]
    assert perfect_failures, verdicts
    for line in perfect_failures:
        assert "strict gate" in line, line
    assert not any("gate" in line for line in verdicts if "PASS" in line or "value 1.00" not in line)


def test_the_summary_table_has_a_header_for_every_column_and_a_legend(demo: Demo) -> None:
    lines = demo.result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("TASK "))
    rule = lines[lines.index(header) + 1]
    columns = rule.split("  ")
    assert len(header.split()) >= len(columns)  # no column under an empty header
    assert header.rstrip().endswith("ZONE"), header
    legend = [line for line in lines if "PASS@K:" in line]
    assert len(legend) == 1 and "PASS^K:" in legend[0] and "MEAN:" in legend[0], legend


def test_the_demo_leaves_nothing_untracked_in_the_clone(demo: Demo) -> None:
    """Issue #20: `tracescore-demo-specs.yaml` was left untracked. The demo says where it writes it."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    assert demo.result.returncode == 0, demo.result.stderr
    assert demo.untracked == [".gitignore"], demo.untracked
    assert (demo.directory / "tracescore-demo-specs.yaml").is_file()
    assert "written to tracescore-demo-specs.yaml" in demo.result.stdout


def test_the_commands_the_demo_prints_run_as_printed(demo: Demo) -> None:
    """Issue #20: the demo ended with `tracescore sql …`, which no shell found (it lives in .venv/bin).
    Every command it prints is run here exactly as printed, from the directory the demo ran in."""
    assert demo.result.returncode == 0, demo.result.stderr
    shown = demo.result.stdout
    printed = shown.split("The same data, with SQL and the CLI:", 1)[1].strip().splitlines()
    assert len(printed) == 4
    for line in printed:
        result = subprocess.run(
            line.strip(),
            shell=True,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            cwd=demo.directory,
        )
        # `score` exits 1 when a run failed, as the demo's runs do by design; 127 is "command not found".
        assert result.returncode in (0, 1), f"{line.strip()}\n{result.stderr}"
        assert result.stdout.strip(), line


def test_demo_shows_one_conversation_judged_turn_by_turn(demo: Demo) -> None:
    """Issue 21: the demo's last step runs a BFCL-style conversation over OTLP into its own sidecar and
    file, and prints its verdict turn by turn, the failing turns named."""
    result = demo.result
    assert result.returncode == 0, result.stderr
    step = result.stdout.split("A multi-turn conversation, judged turn by turn", 1)[1]
    step = step.split("The same data, with SQL and the CLI:", 1)[0]
    assert "conversation FAIL (bfcl-files, 4 turns)" in step
    judged = [
        line.strip()
        for line in step.splitlines()
        if line.strip().startswith("turn ") and ("  PASS" in line or "  FAIL" in line)
    ]
    assert any(line.startswith("turn 1  PASS") for line in judged)
    assert any(line.startswith("turn 2  FAIL  expected no tool call") for line in judged)
    assert any(
        line.startswith("turn 4  FAIL") and 'passed "f01", not a returned value' in line for line in judged
    )
    with duckdb.connect(
        str(demo.directory / "tracescore-demo-conversation.duckdb"), read_only=True
    ) as connection:
        stored = connection.execute("SELECT conversation_id, label FROM verdicts").fetchall()
        turns = connection.execute("SELECT n_turns FROM conversations").fetchall()
    assert [label for _, label in stored] == ["fail"] and turns == [(4,)]

"""`profile: reliability_eval` with no expectations (issue 20), as a user meets it: `tracescore score`
warns on load that the spec checks nothing and passes every run, as Agno's ReliabilityEval does; the
same spec under the default profile is refused before anything is scored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests._history import Call, RunPlan, build_history


def _score(db: Path, spec: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "collector.cli",
            "score",
            "--db",
            str(db),
            "--spec",
            str(spec),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_score_warns_and_passes_every_run(tmp_path: Path) -> None:
    db = tmp_path / "history.duckdb"
    build_history(db, [RunPlan((Call("a"),)), RunPlan((Call("b", error=True),), task="task-b")])
    spec = tmp_path / "vacuous.yaml"
    spec.write_text("name: anything-goes\nprofile: reliability_eval\n")
    result = _score(db, spec)
    assert result.returncode == 0, result.stderr
    [line] = result.stderr.splitlines()
    assert json.loads(line)["level"] == "warning"
    assert json.loads(line)["message"].startswith(
        f"{spec}: spec 'anything-goes': this spec checks nothing: under profile reliability_eval every "
        "run it selects passes"
    )
    verdicts = json.loads(result.stdout)
    assert [(v["task"], v["label"], v["passed"], v["checks"]) for v in verdicts] == [
        ("task-a", "pass", True, []),
        ("task-b", "pass", True, []),
    ]


def test_the_default_profile_refuses_the_same_spec(tmp_path: Path) -> None:
    db = tmp_path / "history.duckdb"
    build_history(db, [RunPlan((Call("a"),))])
    spec = tmp_path / "vacuous.yaml"
    spec.write_text("name: anything-goes\n")
    result = _score(db, spec)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "this spec checks nothing" in result.stderr

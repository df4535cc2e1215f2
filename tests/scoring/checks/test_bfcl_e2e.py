"""`normalize: bfcl` end to end (issue 20): the real OpenTelemetry SDK → OTLP/HTTP → `tracescore serve
--specs` (online verdicts) → DuckDB → `tracescore score` (set-based batch scoring) on the same file.

Two specs differ only in `normalize`: BFCL's (`bfcl`) and tracescore's own folding (`true`). Each run
passes under one and fails under the other, and the online and batch verdicts are the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests._otel import provider
from tests._server import ServeProcess
from tests.scoring.checks.test_checks_e2e import Emitter

RULES = {
    "get_stats": {
        "mode": "exact",
        "values": {
            "player": {"any_of": ["LeBron James"]},
            "unit": {"any_of": ["metric", ""]},
            "season": {"any_of": [2024.0]},
        },
    }
}
PARALLEL = {
    "mode": "unordered",
    "tools": [
        {"tool": "f", "mode": "exact", "values": {"x": {"any_of": [1, 2]}}},
        {"tool": "f", "mode": "exact", "values": {"x": {"any_of": [1]}}},
    ],
}
SPECS = [
    {"name": "bfcl", "select": {"task": "stats"}, "normalize": "bfcl", "argument_rules": RULES},
    {"name": "folded", "select": {"task": "stats"}, "normalize": True, "argument_rules": RULES},
    {"name": "bfcl-parallel", "select": {"task": "parallel"}, "normalize": "bfcl", "trajectory": PARALLEL},
]

RUNS = {
    # BFCL deletes spaces and reads "" as "left out", an int as a float: only bfcl passes
    "joined": {"player": "LeBronJames", "unit": "", "season": 2024},
    # BFCL keeps "!", which tracescore's folding turns into a space: only folded passes
    "punctuated": {"player": "LeBron James!", "unit": "", "season": 2024.0},
}


def _emit(emit: Emitter) -> None:
    for run, arguments in RUNS.items():
        with emit.run("stats", run=run) as e:
            e.tool("get_stats", arguments, 10, 20)
    with emit.run("parallel", run="first-fit") as e:  # BFCL's first fit fails this pair; matching does not
        e.tool("f", {"x": 1}, 10, 20)
        e.tool("f", {"x": 2}, 10, 20)


def _verdicts(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[bool, list[Any]]]:
    return {
        (v["run_id"].removeprefix("run-"), v["spec"]): (
            v["passed"],
            [(c["kind"], c["satisfied"], c["detail"]) for c in v["checks"]],
        )
        for v in rows
    }


def test_bfcl_mode_gives_bfcls_answer_online_and_in_batch(tmp_path: Path) -> None:
    spec_file = tmp_path / "specs.yaml"
    spec_file.write_text(yaml.safe_dump(SPECS))
    server = ServeProcess(tmp_path / "t.duckdb", extra_args=("--specs", str(spec_file))).start()
    try:
        tp = provider(server, "http")
        _emit(Emitter(tp.get_tracer("tests")))
        tp.force_flush()
        tp.shutdown()
    finally:
        assert server.stop() == 0, server.log()

    online = _verdicts([json.loads(row[0]) for row in server.query("SELECT verdict FROM verdicts")])
    command = ["score", "--db", str(server.db), "--spec", str(spec_file), "--format", "json"]
    score = subprocess.run(
        [sys.executable, "-m", "collector.cli", *command],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert score.returncode == 1 and score.stderr == "", score.stderr  # some runs fail
    batch = _verdicts(json.loads(score.stdout))

    assert {key: passed for key, (passed, _) in batch.items()} == {
        ("joined", "bfcl"): True,
        ("joined", "folded"): False,
        ("punctuated", "bfcl"): False,
        ("punctuated", "folded"): True,
        ("first-fit", "bfcl-parallel"): True,
    }
    assert online == batch
    [(_, _, detail)] = batch[("punctuated", "bfcl")][1]
    assert 'player: "LeBron James!" is not any of ["LeBron James"] (bfcl)' in detail
    [(_, _, detail)] = batch[("joined", "folded")][1]
    assert 'player: "LeBronJames" is not any of ["LeBron James"] (normalized)' in detail

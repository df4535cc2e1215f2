"""docs/clickhouse.md's `chdb:PATH` recipe, run as printed (issue 28: the page never showed how to
create and load `otel_traces` for `chdb:PATH`): the demo agent's runs through a real `serve`, exported,
loaded into chDB by the page's own script, then scored from ClickHouse with the verdicts `score --db`
gives."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collector.cli._demo import DEMO_SPECS
from collector.cli._demo_agent import ROLLOUTS, run_agent
from tests._otel import provider
from tests._server import ServeProcess

ROOT = Path(__file__).resolve().parents[3]
SECTION = "## Trying it on one machine: `chdb:PATH`"
# Not run here: the test environment already has chDB (the test extra), and tests install nothing.
NOT_RUN = ".venv/bin/pip install -e '.[clickhouse]'"


def _blocks() -> tuple[list[str], str]:
    """The section's shell lines and its Python script, as the page prints them."""
    page = (ROOT / "docs" / "clickhouse.md").read_text()
    section = page.split(SECTION, 1)[1].split("\n## ", 1)[0]
    [shell] = re.findall(r"```sh\n(.*?)```", section, re.S)
    [script] = re.findall(r"```python\n(.*?)```", section, re.S)
    return [line for line in shell.splitlines() if line.strip()], script


def _bash(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=os.environ,
    )


def test_the_chdb_recipe_runs_as_printed_and_scores_like_the_file(tmp_path: Path) -> None:
    pytest.importorskip("chdb")
    lines, script = _blocks()
    assert lines[0].startswith(NOT_RUN)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))  # what `make` leaves at the top of a clone
    ddl = tmp_path / "tests" / "collector" / "clickhouse" / "traces_table.sql"
    ddl.parent.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "collector" / "clickhouse" / "traces_table.sql", ddl)
    (tmp_path / "load_otel_traces.py").write_text(script)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "demo.yaml").write_text(DEMO_SPECS.format(db="tracescore.duckdb", specs="specs/"))

    server = ServeProcess(db=tmp_path / "tracescore.duckdb").start()
    try:
        tracer_provider = provider(server, service="shop-assistant")
        for rollout in ROLLOUTS:
            run_agent(tracer_provider.get_tracer("test"), rollout)
        tracer_provider.shutdown()
        time.sleep(1.0)  # complete a grace period after the last span
    finally:
        assert server.stop() == 0, server.log()

    export, load, score = lines[1:]
    ran = {}
    for line, expected in ((export, 0), (load, 0), (score, 1)):  # score: some demo runs fail
        ran[line] = _bash(line, tmp_path)
        assert ran[line].returncode == expected, (line, ran[line].stdout, ran[line].stderr)
    assert re.search(r"\b35\b.*\b10\b", ran[load].stdout), ran[load].stdout  # the demo's spans, traces
    from_chdb = _bash(score.split("#")[0] + " --format json", tmp_path)
    from_file = _bash(
        ".venv/bin/tracescore score --db tracescore.duckdb --spec specs/ --no-store --format json", tmp_path
    )
    verdicts = [
        {(v["trace_id"], v["spec"]): (v["label"], v["reason"]) for v in json.loads(done.stdout)}
        for done in (from_chdb, from_file)
    ]
    assert len(verdicts[1]) == 10 and verdicts[0] == verdicts[1]


def test_without_chdb_the_message_says_what_works_from_a_clone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`pip install 'tracescore[clickhouse]'` fails: tracescore is not on PyPI (issue 28)."""
    from collector.clickhouse.connection import ChdbConnection, ClickHouseError

    monkeypatch.setitem(sys.modules, "chdb", None)  # as if chDB were not installed
    with pytest.raises(ClickHouseError) as missing:
        ChdbConnection(tmp_path / "traces.chdb")
    assert "pip install -e '.[clickhouse]'" in str(missing.value)
    assert "'tracescore[clickhouse]'" not in str(missing.value)
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        assert "'tracescore[clickhouse]'" not in page.read_text(), page

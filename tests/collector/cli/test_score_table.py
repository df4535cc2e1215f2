"""`tracescore score`'s table as a newcomer reads it (issue 28): each run's trace id beside its run id
(agents and tracing UIs show trace ids), and a strict-mode failure at value 1.00 says the gate failed
it, as the demo and `watch` do. The same table whether a running server judged the runs, the Python
judge read the file, or the set-based SQL did."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collector.cli._demo import DEMO_SPECS
from collector.cli._demo_agent import ROLLOUTS, run_agent
from collector.cli._main import main
from scoring.batch import score
from tests._otel import provider
from tests._server import ServeProcess

STRICT_STORY = "also sends a newsletter (strict-mode violation)"


def _score(db: Path, spec: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "collector.cli", "score", "--db", str(db), "--spec", str(spec), *extra]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)


def _row(table: str, trace_id: str) -> str:
    [row] = [line for line in table.splitlines() if trace_id in line]
    return row


def _check_table(table: str, traces: dict[str, str]) -> None:
    header = table.splitlines()[0].split()
    assert header == ["RUN", "TRACE", "TASK", "SPEC", "RESULT", "VALUE", "REASON"]
    for story, trace_id in traces.items():
        row = _row(table, trace_id)
        run_id, shown_trace = row.split()[:2]
        assert shown_trace == trace_id, row
        assert run_id != trace_id
        if story.endswith(STRICT_STORY):
            assert re.search(r" FAIL +1\.00 \(failed by the strict gate\) ", row), row
    assert table.count("(failed by the strict gate)") == 1


@pytest.fixture
def history(server: ServeProcess, tmp_path: Path) -> tuple[ServeProcess, Path, dict[str, str]]:
    """The demo's ten runs sent through the real exporter to a real serve, which still runs."""
    spec = tmp_path / "specs.yaml"
    spec.write_text(DEMO_SPECS.format(db=server.db, specs=spec))
    tracer_provider = provider(server, service="shop-assistant")
    tracer = tracer_provider.get_tracer("test")
    traces = {f"{i}: {r.story}": run_agent(tracer, r) for i, r in enumerate(ROLLOUTS)}  # key -> trace id
    tracer_provider.shutdown()
    time.sleep(1.0)  # the runs complete a grace period (0.3 s) after their last span
    return server, spec, traces


def test_the_table_shows_trace_ids_and_the_strict_gate_through_the_server_and_from_the_file(
    history: tuple[ServeProcess, Path, dict[str, str]],
) -> None:
    server, spec, traces = history
    through_server = _score(server.db, spec, "--no-store")
    assert through_server.returncode == 1, through_server.stderr
    _check_table(through_server.stdout, traces)

    assert server.stop() == 0
    from_file = _score(server.db, spec)
    assert from_file.returncode == 1, from_file.stderr
    _check_table(from_file.stdout, traces)
    assert from_file.stdout.count(" FAIL ") == through_server.stdout.count(" FAIL ") == 6


def test_the_set_based_sql_verdicts_carry_trace_ids_and_gates_too(
    history: tuple[ServeProcess, Path, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, spec, traces = history
    assert server.stop() == 0
    monkeypatch.setattr(score, "SQL_FROM_RUNS", 0)  # every spec judged by its SQL, not the Python judge
    assert main(["score", "--db", str(server.db), "--spec", str(spec), "--no-store"]) == 1
    _check_table(capsys.readouterr().out, traces)


def test_trace_url_links_each_run_in_a_last_column(
    history: tuple[ServeProcess, Path, dict[str, str]],
) -> None:
    """Issue 30: `--trace-url` opens each run's trace in the user's tracing UI."""
    server, spec, traces = history
    template = "https://tracing.example/trace/{trace_id}?from=tracescore"
    linked = _score(server.db, spec, "--no-store", "--trace-url", template)
    assert linked.returncode == 1, linked.stderr
    assert linked.stdout.splitlines()[0].split()[-2:] == ["TRACE", "URL"]
    for trace_id in traces.values():
        assert _row(linked.stdout, trace_id).endswith(
            f"https://tracing.example/trace/{trace_id}?from=tracescore"
        )
    refused = _score(server.db, spec, "--trace-url", "https://tracing.example/trace/")
    assert refused.returncode == 2 and "{trace_id}" in refused.stderr and refused.stdout == ""

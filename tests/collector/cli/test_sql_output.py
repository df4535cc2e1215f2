"""`tracescore sql` as a table: long values are cut, visibly, and the user is told how to see them whole
(issue #20: text was cut at ~60 characters without a word)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._otlp import new_span_id, new_trace_id, post_json, request, span
from tests._server import ServeProcess

LONG = "north-" + "x" * 120 + "-end"  # a value far past the table's 60 characters
QUERY = "SELECT tool_name, arguments FROM executions"


def _tracescore(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "collector.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)


def _run_with_a_long_argument() -> dict[str, object]:
    trace_id, root, start = new_trace_id(), new_span_id(), time.time_ns()
    return request(
        [
            span(
                trace_id,
                root,
                "invoke_agent shop",
                start_ns=start,
                duration_ns=5_000_000,
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"},
            ),
            span(
                trace_id,
                new_span_id(),
                "execute_tool lookup",
                parent=root,
                start_ns=start,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.arguments": json.dumps({"region": LONG}),
                },
            ),
        ]
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    server = ServeProcess(tmp_path_factory.mktemp("sql") / "t.duckdb", extra_args=("--grace-seconds", "0.2"))
    server.start()
    try:
        assert post_json(server.http_url, _run_with_a_long_argument())[0] == 200
        # While serve holds the file the CLI asks its API; the table is drawn (and cut) on this side.
        deadline = time.monotonic() + 20
        live = _tracescore("sql", "--db", str(server.db), QUERY)
        while "lookup" not in live.stdout and time.monotonic() < deadline:
            time.sleep(0.2)
            live = _tracescore("sql", "--db", str(server.db), QUERY)
        assert live.returncode == 0, live.stderr
        assert "--max-width" in live.stderr and "…" in live.stdout
    finally:
        assert server.stop() == 0, server.log()
    yield server.db


def test_a_cut_value_is_marked_and_one_hint_on_stderr_says_how_to_see_it_whole(db: Path) -> None:
    result = _tracescore("sql", "--db", str(db), QUERY)
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("lookup"))
    assert LONG not in result.stdout and row.endswith("…") and len(row.split("  ", 1)[1].strip()) == 60
    hints = result.stderr.strip().splitlines()
    assert len(hints) == 1, result.stderr
    for option in ("--format json", "--format csv", "--max-width"):
        assert option in hints[0], hints[0]


@pytest.mark.parametrize(
    "args", [("--max-width", "0"), ("--max-width", "200"), ("--format", "json"), ("--format", "csv")]
)
def test_each_way_the_hint_names_shows_the_whole_value_and_no_hint(db: Path, args: tuple[str, str]) -> None:
    result = _tracescore("sql", "--db", str(db), *args, QUERY)
    assert result.returncode == 0, result.stderr
    assert LONG in result.stdout and "…" not in result.stdout
    assert result.stderr == ""


def test_no_hint_when_nothing_was_cut(db: Path) -> None:
    result = _tracescore("sql", "--db", str(db), "SELECT tool_name FROM executions")
    assert result.returncode == 0 and "lookup" in result.stdout
    assert result.stderr == ""


def test_a_negative_width_is_refused_with_the_reason(db: Path) -> None:
    result = _tracescore("sql", "--db", str(db), "--max-width", "-1", QUERY)
    assert result.returncode == 2
    assert "--max-width" in result.stderr and "0: no limit" in result.stderr

"""`--since`, `--until` and `--where KEY=VALUE` on a DuckDB file (issue 28, item 3): before them, only
`--clickhouse` could choose runs by time, and nothing by version, so `after.json` held the old runs too.
Runs are built through the real ingest path (tests/_history.py); run i starts at START + 10 s × i."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collector.cli._main import main
from scoring.spec.window import RunWindow, group_values, window_run_ids
from tests._history import START_NS, Call, RunPlan, build_history

START = datetime.fromtimestamp(START_NS / 1e9, UTC).replace(tzinfo=None)
SPEC = "name: s\nexpected_tools: [lookup]\n"


def _at(index: int) -> str:
    return (START + timedelta(seconds=10 * index)).isoformat() + "Z"


def _plan(version: str, passed: bool, **attributes: object) -> RunPlan:
    return RunPlan(
        (Call("lookup" if passed else "other"),), attributes={"service.version": version, **attributes}
    )


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("window")
    plans = [
        _plan("1.0", True, **{"deployment.environment": "prod", "build": 3}),  # run 0
        _plan("1.0", True, **{"deployment.environment": "staging"}),  # 1
        _plan("1.0", False, **{"deployment.environment": "prod"}),  # 2
        _plan("1.1", False, **{"deployment.environment": "prod", "build": 4}),  # 3
        _plan("1.1", True, **{"deployment.environment": "staging"}),  # 4
        _plan("1.0", True, **{"deployment.environment": "prod"}),  # 5: the old version still runs
        _plan("1.2", True, **{"deployment.environment": "canary", "flag": True}),  # 6
    ]
    build_history(directory / "h.duckdb", plans)
    (directory / "spec.yaml").write_text(SPEC)
    return directory


def _scored(history: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> list[int]:
    """The runs `score` judged, by index (run ids are `{index + 1:08x}` and a span number)."""
    args = ["score", "--db", str(history / "h.duckdb"), "--spec", str(history / "spec.yaml"), "--no-store"]
    main([*args, "--format", "json", *flags])
    verdicts = json.loads(capsys.readouterr().out)
    return sorted(int(v["trace_id"], 16) - 1 for v in verdicts)


def test_where_chooses_runs_by_a_root_or_resource_attribute(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _scored(history, capsys) == [0, 1, 2, 3, 4, 5, 6]
    assert _scored(history, capsys, "--where", "service.version=1.1") == [3, 4]
    # one key again: any of its values; another key: both must match
    assert _scored(history, capsys, "--where", "service.version=1.1", "--where", "service.version=1.2") == [
        3,
        4,
        6,
    ]
    assert _scored(
        history, capsys, "--where", "service.version=1.0", "--where", "deployment.environment=prod"
    ) == [0, 2, 5]
    # compared as a spec's select: a number by its text, a boolean either way, a run field by its name
    assert _scored(history, capsys, "--where", "build=3") == [0]
    assert _scored(history, capsys, "--where", "flag=TRUE") == [6]
    assert _scored(history, capsys, "--where", "task=task-a") == [0, 1, 2, 3, 4, 5, 6]
    assert _scored(history, capsys, "--where", "service.version=9") == []


def test_since_and_until_compare_the_runs_start(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _scored(history, capsys, "--since", _at(2), "--until", _at(4)) == [2, 3]
    assert _scored(history, capsys, "--since", _at(5)) == [5, 6]
    assert _scored(history, capsys, "--until", _at(1)) == [0]
    # an offset is converted to UTC
    local = (START + timedelta(seconds=20, hours=2)).isoformat() + "+02:00"
    assert _scored(history, capsys, "--since", local, "--where", "service.version=1.1") == [3, 4]


def test_a_window_that_ends_before_it_starts_is_refused(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["score", "--db", str(history / "h.duckdb"), "--spec", str(history / "spec.yaml"), "--no-store"]
    assert main([*args, "--since", _at(4), "--until", _at(2)]) == 2
    assert "--since must be before --until" in capsys.readouterr().err


def test_report_counts_only_the_runs_chosen(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "report",
        "--db",
        str(history / "h.duckdb"),
        "--spec",
        str(history / "spec.yaml"),
        "--format",
        "json",
    ]
    assert main([*args, "--where", "service.version=1.0"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["n_scored"], row["n_passed"]) == (4, 3)
    assert main([*args, "--where", "service.version=1.0", "--since", _at(1)]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["n_scored"], row["n_passed"]) == (3, 2)


def test_group_values_are_ordered_by_when_each_was_first_seen(history: Path) -> None:
    import duckdb

    with duckdb.connect(str(history / "h.duckdb"), read_only=True) as connection:
        found = group_values(connection, "service.version", RunWindow())
        assert [(v.value, v.n_runs) for v in found] == [("1.2", 1), ("1.1", 2), ("1.0", 4)]
        # 1.0 ran last but 1.1 replaced it: first seen, not last seen, makes a version recent
        assert found[2].last_start > found[1].last_start
        window = RunWindow.of(where=[("deployment.environment", "prod")])
        assert [v.value for v in group_values(connection, "service.version", window)] == ["1.1", "1.0"]
        assert len(window_run_ids(connection, window)) == 4


def test_compare_on_a_file_takes_the_two_values_most_recently_first_seen(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compare", "--db", str(history / "h.duckdb"), "--spec", str(history / "spec.yaml"), "--by"]
    assert main([*args, "service.version", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["before"]["value"], document["after"]["value"]) == ("1.1", "1.2")
    assert main([*args, "service.version", "1.0", "1.1", "--format", "json", "--until", _at(5)]) == 0
    document = json.loads(capsys.readouterr().out)
    [row] = document["rows"]
    assert (row["n_before"], row["passed_before"], row["n_after"], row["passed_after"]) == (3, 2, 2, 1)
    assert row["significant"] is False
    capsys.readouterr()
    assert main([*args, "deployment.environment", "--where", "service.version=1.2"]) == 2
    assert "deployment.environment has 1 value(s) among the complete runs chosen: canary" in (
        capsys.readouterr().err
    )


def test_a_server_older_than_windows_is_refused_rather_than_left_to_score_every_run(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A serve from before `since`/`until`/`where` would ignore them; an older build cannot run here, so a
    stand-in answers its OpenAPI document (no /api/v1/values) and counts the scoring requests."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    scored: list[str] = []

    class Old(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"openapi": "3.1.0", "paths": {"/api/v1/score": {}}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            scored.append(self.path)
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Old)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        spec = str(history / "spec.yaml")
        assert main(["score", "--server", url, "--spec", spec, "--where", "service.version=1.1"]) == 2
        assert "older than --since, --until and --where" in capsys.readouterr().err
        assert scored == []
    finally:
        server.shutdown()

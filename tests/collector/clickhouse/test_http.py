"""The HTTP connection: the same SQL path as chDB, over ClickHouse's HTTP interface.

With `TRACESCORE_TEST_CLICKHOUSE_URL` set (e.g. http://default:secret@127.0.0.1:8123), the tests run
against that real server, in a database of their own that they drop afterwards. Without it (no
ClickHouse server can be had here), they run against a loopback stand-in: an HTTP server that answers
the way ClickHouse's HTTP interface does (the POSTed query, settings as URL parameters, HTTP basic
authentication, an error as a non-200 status with ClickHouse's message) by running every query in
ClickHouse's own engine (chDB). Either way, `tracescore score --clickhouse http://…` must give the
verdicts `--clickhouse chdb:…` gives on the same rows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collector.clickhouse.connection import ClickHouseError, connect, insert_rows, rows
from tests.collector.clickhouse._chdb_tool import HTTP_PASSWORD, HTTP_USER
from tests.collector.clickhouse._corpus import framework_requests, framework_specs, load_clickhouse
from tests.collector.clickhouse._exporter import TRACES_TABLE_SQL, rows_of_request

REAL_SERVER = os.environ.get("TRACESCORE_TEST_CLICKHOUSE_URL")


def _stand_in(path: Path) -> Iterator[str]:
    port_file = path.with_suffix(".port")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.collector.clickhouse._chdb_tool", "serve", str(path), str(port_file)]
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text():
            assert process.poll() is None and time.monotonic() < deadline, "the stand-in did not start"
            time.sleep(0.05)
        password = urllib.parse.quote(HTTP_PASSWORD, safe="")
        yield f"http://{HTTP_USER}:{password}@127.0.0.1:{port_file.read_text()}"
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture(scope="module")
def clickhouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(URL, database) of a ClickHouse holding the exporter's table with every framework recording."""
    database = f"tracescore_test_{uuid.uuid4().hex[:8]}"
    if REAL_SERVER:
        url_iterator: Iterator[str] = iter([REAL_SERVER])
    else:
        url_iterator = _stand_in(tmp_path_factory.mktemp("http-stand-in") / "clickhouse")
    url = next(url_iterator)
    connection = connect(url)
    connection.run(f"CREATE DATABASE IF NOT EXISTS {database}")
    connection.run(TRACES_TABLE_SQL.replace("`otel`.", f"`{database}`."))
    for line in framework_requests():
        insert_rows(connection, f"{database}.otel_traces", rows_of_request(json.loads(line)))
    try:
        yield url, database
    finally:
        connection.run(f"DROP DATABASE IF EXISTS {database}")
        next(url_iterator, None)


def _score(url: str, specs: Path, *extra: str) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "collector.cli", "score", "--clickhouse", url, "--spec", str(specs)]
    done = subprocess.run(
        [*command, "--format", "json", *extra],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    verdicts: list[dict[str, Any]] = json.loads(done.stdout)
    return verdicts


def test_http_gives_the_verdicts_chdb_gives(clickhouse: tuple[str, str], tmp_path: Path) -> None:
    url, database = clickhouse
    specs = tmp_path / "specs.yaml"
    specs.write_text(framework_specs())
    local = tmp_path / "chdb"
    load_clickhouse(local, [json.loads(line) for line in framework_requests()])
    over_http = _score(url, specs, "--ch-database", database, "--store")
    in_process = _score(f"chdb:{local}", specs)
    assert len(over_http) > 30
    assert over_http == in_process
    connection = connect(url)
    stored = list(rows(connection, f"SELECT count() FROM {database}.tracescore_verdicts FINAL"))
    assert stored == [[len(over_http)]]


def test_credentials_come_from_the_url_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACESCORE_CH_USER", "from-env")
    monkeypatch.setenv("TRACESCORE_CH_PASSWORD", "pw")
    from_env = connect("https://clickhouse.example:8443/")
    from_url = connect("http://u%40x:p%3A1@clickhouse.example:8123")
    assert (from_env.user, from_env.password, from_env.base) == (  # type: ignore[attr-defined]
        "from-env",
        "pw",
        "https://clickhouse.example:8443",
    )
    assert (from_url.user, from_url.password) == ("u@x", "p:1")  # type: ignore[attr-defined]


@pytest.mark.skipif(bool(REAL_SERVER), reason="the stand-in's password check")
def test_a_refused_login_is_one_clear_error(clickhouse: tuple[str, str]) -> None:
    url, _ = clickhouse
    wrong = url.replace(urllib.parse.quote(HTTP_PASSWORD, safe=""), "wrong")
    with pytest.raises(ClickHouseError, match=r"answered 516: .*Authentication failed"):
        list(rows(connect(wrong), "SELECT 1"))


def test_bad_urls_are_refused_plainly() -> None:
    for bad in ("ftp://host", "localhost:8123", "chdb:"):
        with pytest.raises(ClickHouseError, match=r"expected|needs a data directory"):
            connect(bad)


def _shifted(request: dict[str, Any], delta_ns: int) -> dict[str, Any]:
    """The request with every time moved by `delta_ns` (as if its agent ran now)."""
    text = json.dumps(request)
    moved = json.loads(text)
    for resource_spans in moved.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("startTimeUnixNano", "endTimeUnixNano"):
                    span[key] = str(int(span[key]) + delta_ns)
                for event in span.get("events", []):
                    event["timeUnixNano"] = str(int(event["timeUnixNano"]) + delta_ns)
    return moved


def _cells() -> list[list[dict[str, Any]]]:
    from tests.frameworks.matrix import CELLS

    return [
        [json.loads(line) for line in (cell.fixture / "otlp.jsonl").read_bytes().splitlines()]
        for cell in sorted(CELLS, key=lambda c: c.name)
    ]


def _first_ns(requests: list[dict[str, Any]]) -> int:
    return min(
        int(span["startTimeUnixNano"])
        for request in requests
        for resource_spans in request["resourceSpans"]
        for scope_spans in resource_spans["scopeSpans"]
        for span in scope_spans["spans"]
    )


def test_follow_scores_traces_as_they_arrive(clickhouse: tuple[str, str], tmp_path: Path) -> None:
    """Over HTTP (the stand-in lets the test write while --follow reads): traces written after
    --follow started are scored once they have gone quiet, each run once."""
    from tests.collector.clickhouse.test_follow import Follower

    url, _ = clickhouse
    database = f"follow_{uuid.uuid4().hex[:8]}"
    connection = connect(url)
    connection.run(f"CREATE DATABASE {database}")
    connection.run(TRACES_TABLE_SQL.replace("`otel`.", f"`{database}`."))
    cells = _cells()[:8]
    specs = tmp_path / "specs.yaml"
    specs.write_text(framework_specs())

    def write(group: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """Each cell's recording as if it ran just now, one cell after another."""
        written = []
        for requests in group:
            delta = time.time_ns() - _first_ns(requests) - 5_000_000_000
            for request in requests:
                moved = _shifted(request, delta)
                insert_rows(connection, f"{database}.otel_traces", rows_of_request(moved))
                written.append(moved)
        return written

    try:
        first = write(cells[:4])
        follower = Follower(url, specs, "--ch-database", database)
        try:
            seen: list[tuple[str, str]] = []
            contents: dict[tuple[str, str], Any] = {}
            follower.read_until(seen, 1, contents)
            second = write(cells[4:])
            local = tmp_path / "chdb"
            load_clickhouse(local, first + second)
            expected = {(v["run_id"], v["spec"]) for v in _score(f"chdb:{local}", specs)}
            while set(seen) < expected:
                follower.read_until(seen, len(seen) + 1, contents)
        finally:
            follower.process.send_signal(signal.SIGTERM)
            assert follower.process.wait(60) == 0
        assert sorted(seen) == sorted(expected)  # each once
        later = {row["TraceId"] for request in second for row in rows_of_request(request)}
        assert len(expected) > 10
        assert sum(contents[key]["trace_id"] in later for key in seen) >= 10  # written after the start
        stored = list(rows(connection, f"SELECT count() FROM {database}.tracescore_verdicts"))
        assert stored == [[len(expected)]]
    finally:
        connection.run(f"DROP DATABASE IF EXISTS {database}")

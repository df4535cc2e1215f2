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

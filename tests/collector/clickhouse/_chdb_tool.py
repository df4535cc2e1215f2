"""ClickHouse's engine (chDB) for tests, always in a child process.

chDB runs one embedded server per process, on one data directory for the life of the process; the
test process would pin the first directory any test opened (and the Parquet export test runs chDB
too). So tests load and query their directories through `python -m tests.collector.clickhouse._chdb_tool`:

    load PATH FILE        create the exporter's table, insert the OTLP/JSON requests of FILE (JSON lines)
    query PATH            run the SQL read from stdin, print its rows as one JSON array
    serve PATH PORT_FILE  a ClickHouse-like HTTP interface on loopback (see test_http.py)
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HTTP_USER, HTTP_PASSWORD = "scorer", "s3cret/:@"


def _run(*args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tests.collector.clickhouse._chdb_tool", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def load(path: Path, requests: list[dict[str, Any]]) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as file:
        file.write("\n".join(json.dumps(r) for r in requests))
    try:
        _run("load", str(path), file.name)
    finally:
        Path(file.name).unlink()


def query(path: Path, sql: str) -> list[list[Any]]:
    answer: list[list[Any]] = json.loads(_run("query", str(path), stdin=sql))
    return answer


def _load(path: str, file: str) -> None:
    from collector.clickhouse.connection import connect, insert_rows
    from tests.collector.clickhouse._exporter import TRACES_TABLE_SQL, rows_of_request

    connection = connect(f"chdb:{path}")
    try:
        connection.run("CREATE DATABASE IF NOT EXISTS otel")
        connection.run(TRACES_TABLE_SQL)
        for line in Path(file).read_text().splitlines():
            insert_rows(connection, "`otel`.`otel_traces`", rows_of_request(json.loads(line)))
    finally:
        connection.close()


def _query(path: str) -> None:
    from collector.clickhouse.connection import connect, rows

    connection = connect(f"chdb:{path}")
    try:
        print(json.dumps(list(rows(connection, sys.stdin.read()))))
    finally:
        connection.close()


def _serve(path: str, port_file: str) -> None:
    from chdb import session

    engine = session.Session(path)
    lock = threading.Lock()
    expected = "Basic " + base64.b64encode(f"{HTTP_USER}:{HTTP_PASSWORD}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.headers.get("Authorization") != expected:
                self._answer(516, b"Code: 516. DB::Exception: scorer: Authentication failed")
                return
            sql = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
            settings = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            try:
                with lock:
                    for name, values in settings.items():
                        engine.query(f"SET {name} = '{values[0]}'")
                    result = engine.query(sql)
                self._answer(200, result.bytes() if result is not None else b"")
            except Exception as exc:
                self._answer(500, str(exc).encode())

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    {"load": _load, "query": _query, "serve": _serve}[command](*arguments)

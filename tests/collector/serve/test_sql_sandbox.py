"""Nobody writes through the read-only door (issue 26, section 1), against a real `serve` on loopback.

- `EXPLAIN ANALYZE <write>` passed the statement-type check and ran on the writer's connection: it
  deleted spans and executions, replaced views, moved the replay floor. Now every statement runs in a
  read-only DuckDB transaction, so a write the check misses fails on the database (proved on the lower
  layer directly), and the check refuses EXPLAIN ANALYZE with one clear line.
- A page in the user's browser could send that query as text/plain or a form, cross-origin, without a
  preflight: POST bodies must be JSON (415), another site's Origin is refused (403), a preflight gets
  no Access-Control-Allow-* header.
- 400 values of 1 MB took the server past 1.5 GB: answers are capped in bytes as they are fetched.
- A few slow queries held every thread the API reads on (runs waited 9 s): SQL has its own lane.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from collector.serve._read_lanes import SQL_THREADS, SQL_WAITING
from collector.store.database import open_writer
from collector.store.sql import (
    MAX_RESULT_BYTES,
    ResultTooLarge,
    SqlRefused,
    check_read_only,
    query_file,
    render_rows,
    run_read_only,
)
from tests._otlp import new_span_id, new_trace_id, request, span
from tests._raw import request as raw_request
from tests._server import ServeProcess
from tests.collector.serve._sandbox import call, counts, get, served_with_runs, sql

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    server = served_with_runs(tmp_path_factory.mktemp("sandbox"))
    try:
        yield server
    finally:
        server.kill()


# ---- the SQL itself ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "EXPLAIN ANALYZE DELETE FROM spans_p0",
        "EXPLAIN ANALYZE DELETE FROM executions_p0",
        "EXPLAIN ANALYSE DELETE FROM spans_p1",
        "EXPLAIN (ANALYZE, FORMAT json) DELETE FROM executions_p1",
        "EXPLAIN /* a comment */ ANALYZE UPDATE tracescore_state SET value = 999999999",
        "EXPLAIN ANALYZE CREATE OR REPLACE VIEW verdicts AS SELECT * FROM verdicts WHERE false",
        "EXPLAIN ANALYZE CREATE TABLE planted AS SELECT 1 AS a",
    ],
)
def test_explain_analyze_of_a_write_is_refused_and_changes_nothing(served: ServeProcess, query: str) -> None:
    before = counts(served)
    status, answer = sql(served, query)
    assert status == 400 and "EXPLAIN ANALYZE" in answer["error"], answer
    assert counts(served) == before
    assert sql(served, "SELECT count(*) FROM planted")[0] == 400  # no such table


def test_tracescore_sql_through_a_running_server_cannot_write(served: ServeProcess) -> None:
    before = counts(served)
    query = "EXPLAIN ANALYZE DELETE FROM spans_p0"
    result = subprocess.run(
        [sys.executable, "-m", "collector.cli", "sql", "--db", str(served.db), query],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode != 0
    assert "EXPLAIN ANALYZE" in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert counts(served) == before


def test_tracescore_sql_says_when_the_server_cut_the_rows(served: ServeProcess) -> None:
    """The server answers at most 10,000 rows; the CLI printed them as if they were all there."""
    query = "SELECT range AS i FROM range(10005)"
    result = subprocess.run(
        [sys.executable, "-m", "collector.cli", "sql", "--db", str(served.db), "--format", "csv", query],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 + 10_000
    assert "at most 10,000 rows" in result.stderr and "LIMIT" in result.stderr


WRITES = [
    "DELETE FROM precious",
    "EXPLAIN ANALYZE DELETE FROM precious",
    "EXPLAIN (ANALYZE) INSERT INTO precious VALUES (99)",
    "WITH doomed AS (SELECT 1) DELETE FROM precious",
    "UPDATE precious SET i = -1",
    "INSERT INTO precious VALUES (99) RETURNING *",
    "TRUNCATE precious",
    "DROP TABLE precious",
    "ALTER TABLE precious ADD COLUMN j INTEGER",
    "COMMENT ON TABLE precious IS 'changed'",
    "CREATE TABLE planted AS SELECT 1 AS a",
    "CREATE OR REPLACE VIEW window_on AS SELECT 2 AS i",
    "CREATE MACRO planted() AS 1",
    "CREATE SCHEMA planted",
    "CREATE SEQUENCE planted",
    "SELECT nextval('counter')",
    "SELECT setval('counter', 999)",
    "MERGE INTO precious USING (SELECT 1 AS i) AS s ON precious.i = s.i WHEN MATCHED THEN DELETE",
]


def _precious(connection: duckdb.DuckDBPyConnection) -> tuple[object, ...]:
    return (
        connection.execute("SELECT list(i ORDER BY i) FROM precious").fetchall(),
        connection.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'window_on'").fetchall(),
        connection.execute("SELECT currval('counter')").fetchall(),
        connection.execute("SELECT count(*) FROM duckdb_tables()").fetchall(),
        connection.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'precious'").fetchall(),
        connection.execute("SELECT count(*) FROM duckdb_functions() WHERE NOT internal").fetchall(),
        connection.execute("SELECT count(*) FROM duckdb_schemas()").fetchall(),
        connection.execute("SELECT count(*) FROM duckdb_sequences()").fetchall(),
    )


@pytest.mark.parametrize("statement", WRITES)
def test_a_write_the_check_misses_fails_on_the_database(tmp_path: Path, statement: str) -> None:
    """The lower layer alone, with no statement check in front: the server's own hardened connection,
    and the statement run as the API runs it. DuckDB refuses the write, not tracescore's check."""
    connection = open_writer(tmp_path / "t.duckdb")
    connection.execute("CREATE TABLE precious AS SELECT range AS i FROM range(5)")
    connection.execute("CREATE VIEW window_on AS SELECT 1 AS i")
    connection.execute("CREATE SEQUENCE counter")
    connection.execute("SELECT nextval('counter')").fetchall()
    before = _precious(connection)
    cursor = connection.cursor()
    try:
        with pytest.raises(SqlRefused, match=r"read-only|only reads"):
            run_read_only(cursor, statement)
    finally:
        cursor.close()
    assert _precious(connection) == before
    connection.close()


@pytest.mark.parametrize("statement", ["COMMIT", "ROLLBACK", "ABORT", "BEGIN"])
def test_a_transaction_statement_ends_nothing_it_should_not(tmp_path: Path, statement: str) -> None:
    """Only the parsed statement runs, never the text after it: a COMMIT that ends the read-only
    transaction has nothing after it to run, and the query's cursor is its own (closed afterwards), so the
    writer's connection is never left inside a transaction."""
    connection = open_writer(tmp_path / "t.duckdb")
    connection.execute("CREATE TABLE precious AS SELECT range AS i FROM range(5)")
    cursor = connection.cursor()
    with contextlib.suppress(SqlRefused):  # BEGIN is refused (already in one); the others run
        run_read_only(cursor, statement)
    with pytest.raises(SqlRefused, match="one statement"):
        run_read_only(cursor, f"{statement}; DELETE FROM precious")
    cursor.close()
    connection.execute("INSERT INTO precious VALUES (5)")  # the writer's own connection: not in a transaction
    assert connection.execute("SELECT count(*) FROM precious").fetchall() == [(6,)]
    connection.close()


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("EXPLAIN ANALYZE SELECT 1", "EXPLAIN ANALYZE"),
        ("explain (format json, analyze) SELECT 1", "EXPLAIN ANALYZE"),
        ("SELECT * FROM checkpoint()", "checkpoint()"),
        ("SELECT * FROM range(3), (SELECT * FROM main.force_checkpoint())", "force_checkpoint()"),
        ("SELECT * FROM query('SELECT * FROM checkpoint()')", "query()"),
        ("SELECT * FROM json_execute_serialized_sql('{}')", "json_execute_serialized_sql()"),
        ("SELECT * FROM truncate_duckdb_logs()", "truncate_duckdb_logs()"),
        ("PIVOT spans ON name USING count(*)", "IN ("),
        ("CALL checkpoint()", "CALL"),
        ("CHECKPOINT", "CALL"),  # DuckDB parses CHECKPOINT as a call of checkpoint()
    ],
)
def test_the_check_names_what_it_refuses(query: str, said: str) -> None:
    """What a read-only transaction still lets through (a checkpoint folds the WAL into the file; query()
    runs SQL text the check cannot see), and EXPLAIN ANALYZE, are refused by name."""
    connection = duckdb.connect()
    connection.execute("CREATE TABLE spans AS SELECT 'a' AS name")
    with pytest.raises(SqlRefused) as refused:
        check_read_only(connection, query)
    assert said in str(refused.value)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM spans",
        "DESCRIBE spans",
        "SHOW TABLES",
        "SUMMARIZE spans",
        "FROM spans",
        "EXPLAIN SELECT * FROM spans",
        "PIVOT spans ON name IN ('a') USING count(*)",
        "SELECT * FROM pragma_table_info('spans')",
        "SELECT * FROM query_table('spans')",
    ],
)
def test_what_only_reads_still_runs(query: str, tmp_path: Path) -> None:
    connection = open_writer(tmp_path / "t.duckdb")
    connection.execute("CREATE TABLE plain AS SELECT 'a' AS name")
    cursor = connection.cursor()
    check_read_only(cursor, query.replace("spans", "plain"))
    assert run_read_only(cursor, query.replace("spans", "plain")).columns
    cursor.close()
    connection.close()


@pytest.mark.parametrize(
    "query",
    [
        "SELECT INTERVAL 99999999 YEARS",
        "SELECT [INTERVAL 99999999 YEARS]",
        "SELECT map([DATE '2020-01-01'], [2])",
    ],
)
def test_a_value_the_answer_cannot_carry_is_one_clear_line(served: ServeProcess, query: str) -> None:
    """Found beside the fuzz: values Python cannot hold, or JSON cannot key by, answered 500."""
    status, answer = sql(served, query)
    assert status == 400 and "cast it to VARCHAR" in answer["error"], answer
    assert sql(served, f"SELECT ({query.removeprefix('SELECT ')})::VARCHAR AS v")[0] == 200


def test_the_file_mode_prints_such_values_as_json_too(tmp_path: Path) -> None:
    """`tracescore sql --format json` on the file: a MAP keyed by dates was a traceback."""
    path = tmp_path / "t.duckdb"
    duckdb.connect(str(path)).close()
    columns, rows = query_file(path, "SELECT map([DATE '2020-01-01'], [2]) AS m, [DATE '2020-01-02'] AS l")
    printed = json.loads(render_rows(columns, rows, "json")[0])
    assert printed == [{"m": {"2020-01-01": 2}, "l": ["2020-01-02"]}]


# ---- what a browser page may send ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None],
)
@pytest.mark.parametrize("path", ["/api/v1/sql", "/api/v1/score", "/api/v1/report", "/api/v1/export"])
def test_post_bodies_must_be_json(served: ServeProcess, path: str, content_type: str | None) -> None:
    before = counts(served)
    headers = {"Content-Type": content_type} if content_type else {}
    body = json.dumps({"query": "EXPLAIN ANALYZE DELETE FROM spans_p0"}).encode()
    status, answer, _ = call(served, path, body, **headers)
    assert status == 415 and "application/json" in answer["error"], answer
    assert counts(served) == before


def test_another_sites_page_is_refused(served: ServeProcess) -> None:
    port = served.http_port
    evil = {"Origin": "http://evil.example"}
    assert get(served, "/api/v1/runs", **evil)[0] == 403
    assert get(served, "/api/v1/verdicts", Origin="null")[0] == 403
    assert get(served, "/metrics", Origin=f"http://127.0.0.1:{port + 1}")[0] == 403  # another local page
    assert get(served, "/api/v1/runs")[0] == 200  # no Origin: curl, the CLI, a script
    assert get(served, "/api/v1/runs", Origin=f"http://127.0.0.1:{port}")[0] == 200  # the API's own page
    assert get(served, "/api/v1/runs", Origin=f"http://localhost:{port}", Host=f"localhost:{port}")[0] == 200
    before = counts(served)
    status, answer = sql(served, "EXPLAIN ANALYZE DELETE FROM spans_p0", **evil)
    assert status == 403 and "Origin" in answer["error"]
    assert counts(served) == before


def test_a_preflight_allows_nothing(served: ServeProcess) -> None:
    for path in ("/api/v1/sql", "/api/v1/runs"):
        status, _, headers = call(
            served,
            path,
            method="OPTIONS",
            Origin="http://evil.example",
            **{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"},
        )
        assert status == 403
        assert not [h for h in headers if h.lower().startswith("access-control-")], headers


# ---- how much one answer may hold, and how long it may hold others up -------------------------------


def test_an_answer_is_capped_in_bytes(served: ServeProcess) -> None:
    status, answer = sql(served, "SELECT repeat('x', 1000000) AS big FROM range(400)")
    assert status == 400, answer
    assert answer["error"].startswith(f"the answer is larger than {MAX_RESULT_BYTES // MIB} MiB")
    assert "LIMIT" in answer["error"]
    status, answer = sql(served, "SELECT repeat('x', 1000000) AS big FROM range(20)")
    assert status == 200 and len(answer["rows"]) == 20
    assert get(served, "/healthz")[0] == 200


def test_the_file_mode_has_the_same_byte_cap(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    duckdb.connect(str(path)).close()
    with pytest.raises(ResultTooLarge, match=f"^the answer is larger than {MAX_RESULT_BYTES // MIB} MiB"):
        query_file(path, f"SELECT repeat('x', {MIB}) FROM range({MAX_RESULT_BYTES // MIB + 8})")
    columns, rows = query_file(path, "SELECT range AS i FROM range(20000)")  # no row cap on the file
    assert columns == ["i"] and len(rows) == 20000


def test_slow_sql_does_not_hold_up_the_apis_reads(served: ServeProcess) -> None:
    """As many sleeping queries as asyncio's default pool has threads (what every read used to share):
    the runs list still answers at once, and SQL past its lane's queue is told to come back."""
    slow = min(32, (os.cpu_count() or 1) + 4)
    answers: list[int] = []
    threads = [
        threading.Thread(target=lambda: answers.append(sql(served, "SELECT sleep_ms(3000)")[0]))
        for _ in range(slow)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.7)  # every slow query has arrived
    started = time.monotonic()
    assert get(served, "/api/v1/runs")[0] == 200
    waited = time.monotonic() - started
    for thread in threads:
        thread.join(30)
    assert waited < 1.5, f"the runs list waited {waited:.1f} s behind slow SQL"
    taken = min(slow, SQL_THREADS + SQL_WAITING)
    assert answers.count(200) + answers.count(504) == taken and answers.count(503) == slow - taken, answers


def test_otlp_bodies_keep_their_content_types(served: ServeProcess) -> None:
    """The JSON-only rule is the API's: /v1/traces still takes protobuf and JSON, as OTLP says, even
    with an Origin. (Last in this module: the spans it sends change the counts the others compare.)"""
    protobuf, _ = raw_request(["invoke_agent other"])
    document = request([span(new_trace_id(), new_span_id(), "invoke_agent other")])
    for content_type, body in (
        ("application/x-protobuf", protobuf),
        ("application/json", json.dumps(document).encode()),
    ):
        status, _, _ = call(served, "/v1/traces", body, **{"Content-Type": content_type})
        assert status == 200, content_type

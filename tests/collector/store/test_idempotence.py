"""Promise 2, re-sends never duplicate: spans keyed on (trace_id, span_id), verdicts on (run, spec, version).

What tests/collector/receive/test_receivers.py and tests/collector/serve/test_serve_lifecycle.py already
prove (a re-sent request, a re-send
after a clean restart) is not repeated here. These cover the other ways a span or a verdict can come
twice: twice in one request, in two requests of one group commit, after its trace left memory, and a
crash that makes the restarted server re-read traces whose runs were already complete and scored.
"""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from collector.decode.prepare import prepare_spans
from collector.model.domain import Span
from collector.store.database import open_writer
from collector.store.schema import partitions
from collector.store.writer import WriteJob, Writer, WriterSettings
from tests._otlp import new_span_id, new_trace_id, post_json, request, span
from tests._server import ServeProcess
from tests._spans import domain_span as _span

AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
SPEC = "name: uses-lookup\nexpected_tools: [lookup]\n"


# ---- in process: the writer alone -----------------------------------------------------------------


def _tool_span(trace_id: str, span_id: str, parent: str) -> Span:
    return dataclasses.replace(_span(trace_id, span_id, parent), name="execute_tool lookup", attributes=TOOL)


def _job(spans: list[Span], answers: list[BaseException | None]) -> WriteJob:
    return WriteJob(prepare_spans(spans), answers.append)


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = open_writer(tmp_path / "w.duckdb")
    try:
        yield con
    finally:
        con.close()


def _wait(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _count(con: duckdb.DuckDBPyConnection, trace_id: str) -> tuple[int, int]:
    row = con.execute(
        "SELECT count(*), count(DISTINCT span_id) FROM spans WHERE trace_id = ?", [trace_id]
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_span_twice_in_one_request_and_in_one_group_commit_is_stored_once(
    connection: duckdb.DuckDBPyConnection,
) -> None:
    writer = Writer(connection, WriterSettings(grace_s=60))
    trace_id, root, child = new_trace_id(), new_span_id(), new_span_id()
    answers: list[BaseException | None] = []
    # Queued before the writer starts, so both jobs land in one group commit.
    writer.submit(_job([_span(trace_id, root), _span(trace_id, root)], answers))
    writer.submit(_job([_span(trace_id, child, root), _span(trace_id, root)], answers))
    writer.start()
    _wait(lambda: len(answers) == 2)
    writer.stop()
    assert answers == [None, None]
    assert _count(connection, trace_id) == (2, 2)
    assert writer.stats.spans_duplicate == 2


def test_a_resend_after_the_trace_left_memory_is_stored_once_and_reopens_nothing(
    connection: duckdb.DuckDBPyConnection,
) -> None:
    # Retention 0: a completed trace leaves memory at once, as it does after --retention in production.
    writer = Writer(connection, WriterSettings(grace_s=0.05, retention_s=0.0, completion_interval_s=0.01))
    trace_id, root, child = new_trace_id(), new_span_id(), new_span_id()
    spans = [_span(trace_id, root), _span(trace_id, child, root)]
    answers: list[BaseException | None] = []
    writer.start()
    writer.submit(_job(spans, answers))
    _wait(lambda: writer.stats.traces_completed == 1 and writer.open_traces == 0)
    _wait(lambda: trace_id not in writer._tracker.traces)
    writer.submit(_job(spans, answers))  # the client's re-send of a request whose answer it lost
    _wait(lambda: len(answers) == 2)
    time.sleep(0.1)
    writer.stop()
    assert answers == [None, None]
    assert _count(connection, trace_id) == (2, 2)
    assert connection.execute(
        "SELECT version, status FROM run_traces WHERE trace_id = ?", [trace_id]
    ).fetchall() == [(1, "complete")]


def _by_partition(con: duckdb.DuckDBPyConnection, table: str, trace_id: str) -> list[int]:
    return [
        int(con.execute(f"SELECT count(*) FROM {p} WHERE trace_id = ?", [trace_id]).fetchall()[0][0])
        for p in partitions(table)
    ]


def test_a_run_completed_again_after_a_partition_switch_replaces_its_rows_in_both_partitions(
    connection: duckdb.DuckDBPyConnection,
) -> None:
    """Each written table is two partitions and the writer turns to the other at every checkpoint
    (issue 17): keys are no longer enforced by one table, so a run completed in one partition and again
    in the other (a late tool span) must leave one row per key, and a re-send after the switch must not
    store its spans twice."""
    writer = Writer(connection, WriterSettings(grace_s=0.05, completion_interval_s=0.01))
    trace_id, root, tool = new_trace_id(), new_span_id(), new_span_id()
    answers: list[BaseException | None] = []
    writer.start()
    writer.submit(_job([_span(trace_id, root), _tool_span(trace_id, tool, root)], answers))
    _wait(lambda: writer.stats.traces_completed == 1)
    assert _by_partition(connection, "executions", trace_id) == [1, 0]
    assert writer._checkpointer.checkpoint()  # what the timer does: switch, then checkpoint
    late = new_span_id()
    writer.submit(_job([_tool_span(trace_id, late, root), _span(trace_id, root)], answers))
    _wait(lambda: writer.stats.traces_completed == 2)
    writer.stop()
    assert answers == [None, None]
    assert _by_partition(connection, "spans", trace_id) == [2, 1]
    assert _by_partition(connection, "executions", trace_id) == [0, 2]
    assert _by_partition(connection, "run_traces", trace_id) == [0, 1]
    assert connection.execute(
        "SELECT version, status, n_executions FROM run_traces WHERE trace_id = ?", [trace_id]
    ).fetchall() == [(2, "complete", 2)]
    assert sorted(
        r[0]
        for r in connection.execute(
            "SELECT span_id FROM executions WHERE trace_id = ?", [trace_id]
        ).fetchall()
    ) == sorted([tool, late])


# ---- a real server: verdicts across a crash --------------------------------------------------------


def _get(server: ServeProcess, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}{path}", timeout=10) as response:
        return json.loads(response.read())


def _agent_trace(trace_id: str) -> tuple[str, list[dict[str, Any]]]:
    root = new_span_id()
    return root, [
        span(trace_id, root, "invoke_agent shop", attributes=AGENT),
        span(trace_id, new_span_id(), "execute_tool lookup", parent=root, attributes=TOOL),
    ]


def test_a_crash_does_not_complete_or_score_a_finished_run_again(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(SPEC)
    db = tmp_path / "v.duckdb"
    args = ("--specs", str(tmp_path / "spec.yaml"))
    server = ServeProcess(db, extra_args=args).start()
    # A trace whose root never comes stays open (idle timeout 30 s) and holds the replay floor down...
    waiting = new_trace_id()
    orphan = span(waiting, new_span_id(), "execute_tool lookup", parent=new_span_id(), attributes=TOOL)
    assert post_json(server.http_url, request([orphan]))[0] == 200
    # ...so a run completed and scored after it lies above the floor when the server is killed.
    trace_id = new_trace_id()
    run_id, spans = _agent_trace(trace_id)
    assert post_json(server.http_url, request(spans))[0] == 200
    _wait(lambda: len(_get(server, f"/api/v1/verdicts?run={run_id}")) == 1, 20)
    server.kill()

    restarted = ServeProcess(db, extra_args=args).start()
    time.sleep(1.0)  # grace is 0.3 s: a re-read complete run would be completed and scored again by now
    assert restarted.stop() == 0, restarted.log()
    assert restarted.query("SELECT version, status FROM run_traces WHERE trace_id = ?", [trace_id]) == [
        (1, "complete")
    ]
    assert restarted.query("SELECT run_version, label FROM verdicts WHERE run_id = ?", [run_id]) == [
        (1, "pass")
    ]
    # The waiting trace was re-read and completed by the stop: nothing acknowledged was left behind.
    assert restarted.query("SELECT count(*) FROM run_traces WHERE trace_id = ?", [waiting]) == [(1,)]

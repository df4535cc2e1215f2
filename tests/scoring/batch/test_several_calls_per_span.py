"""Several executions of one span (Haystack 2's ToolInvoker) are judged alike by the Python judge and by
set-based scoring, and each is its own call: joined to its own request, in its request's round.

The executions come from the recorded Haystack 2 traces (tests/frameworks/fixtures/haystack2-*), sent to a
real `tracescore serve` over OTLP/HTTP."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import duckdb
import pytest

from scoring import Spec, score_history, score_runs
from tests._server import ServeProcess
from tests.frameworks.matrix import BY_NAME

CELLS = ("haystack2-native", "haystack2-openinference")

SPECS = [
    Spec.model_validate(
        {
            "name": "weather",
            "select": {"task": "weather"},
            "expected_tools": ["get_weather"],
            "arguments": {"get_weather": {"city": "Tokyo"}},
            "calls": {"get_weather": {"exactly": 2}},
            "parallel": {"tools": ["get_weather"], "max_rounds": 1},
            "trajectory": {"mode": "strict", "tools": ["get_weather", "get_weather"]},
            "allow_additional": False,
        }
    ),
    Spec.model_validate(
        {"name": "booking", "select": {"task": "booking"}, "expected_tools": ["book_flight"]}
    ),
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    server = ServeProcess(tmp_path_factory.mktemp("several") / "store.duckdb").start()
    try:
        for cell in CELLS:
            for line in (BY_NAME[cell].fixture / "otlp.jsonl").read_bytes().splitlines():
                request = urllib.request.Request(
                    server.http_url, data=line, headers={"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(request, timeout=30) as response:
                    response.read()
    finally:
        assert server.stop() == 0, server.log()
    connection = duckdb.connect(str(server.db), read_only=True)
    try:
        yield connection
    finally:
        connection.close()


def test_each_call_of_the_span_is_stored_and_joined_to_its_own_request(
    stored: duckdb.DuckDBPyConnection,
) -> None:
    rows = stored.execute(
        "SELECT e.service_name, e.call_index, e.arguments->>'city', e.call_id, r.position, r.call_id "
        "FROM executions e JOIN tool_requests r ON r.trace_id = e.trace_id "
        "AND r.execution_span_id = e.span_id AND r.execution_call_index = e.call_index "
        "WHERE e.tool_name = 'get_weather' ORDER BY e.service_name, e.call_index"
    ).fetchall()
    assert rows == [
        (cell, index, city, call_id, index, request_id)
        for cell in CELLS
        for index, city, call_id in ((0, "Paris", "call_paris"), (1, "Tokyo", "call_tokyo"))
        # OpenInference's Haystack LLM spans give the requests no id: they join by name and arguments.
        for request_id in ([call_id] if cell == "haystack2-native" else [None])
    ]


def test_the_python_judge_and_set_based_scoring_agree(stored: duckdb.DuckDBPyConnection) -> None:
    python = list(score_runs(stored, SPECS))
    sql = list(score_history(stored, SPECS))
    assert python == sql
    weather = [v for v in python if v.spec == "weather"]
    assert [v.passed for v in weather] == [True, True], [v.reason for v in weather]
    for verdict in weather:
        calls = verdict.detail["reconciliation"]["calls"]
        assert [(c["span_id"], c["request"]["position"]) for c in calls] == [
            (calls[0]["span_id"], 0),
            (calls[0]["span_id"], 1),
        ]
    booking = [v for v in python if v.spec == "booking"]
    assert [v.passed for v in booking] == [False, False]
    assert all("book_flight" in (v.reason or "") and "errored" in (v.reason or "") for v in booking)

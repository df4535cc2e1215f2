"""A handoff of the OpenAI Agents SDK for JavaScript, through OpenInference's processor, read as the Python
SDK's is (tests/frameworks/test_openai_agents.py): an execution of the tool the model called.

recordings/openai-agents-js-handoff/ is what tests/frameworks/node/drive_openai_agents.mjs exported
with `--scenario delegation --delegation handoff` (`@openai/agents` 0.20.0,
`@arizeai/openinference-instrumentation-openai-agents` 0.2.15): the leader `coordinator` has the member
`weather_agent` in its `handoffs`, its model calls `transfer_to_weather_agent`, and the member calls
`get_weather` and answers. It is not a matrix cell: after a handoff the member is a top-level agent of the
run, not a member under the leader, which is what the matrix's delegation rules hold a cell to.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import duckdb

from collector.decode.from_json import decode_json
from collector.model.domain import HANDOFF, Span
from collector.recognise.span import recognise
from tests._server import ServeProcess

RECORDING = Path(__file__).parent / "recordings" / "openai-agents-js-handoff" / "otlp.jsonl"


def _spans() -> list[Span]:
    return [span for line in RECORDING.read_bytes().splitlines() for span in decode_json(line).spans]


def test_the_handoff_span_is_an_execution_of_the_transfer_tool() -> None:
    (span,) = [s for s in _spans() if s.name == "handoff to weather_agent"]
    # What the JS processor writes, unlike the Python one: a tool name of its own.
    assert span.attributes["tool.name"] == "handoff_to_weather_agent"
    execution = recognise(span).execution
    assert execution is not None
    assert (execution.tool_name, execution.kind) == ("transfer_to_weather_agent", HANDOFF)
    assert execution.arguments.present is False  # `{"from_agent": …}` is no argument of the model's call


def _rows(db: Path, sql: str) -> list[dict[str, Any]]:
    with duckdb.connect(str(db), read_only=True) as connection:
        cursor = connection.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_the_stored_handoff_is_joined_to_its_request_and_the_member_runs_in_the_same_run(
    tmp_path: Path,
) -> None:
    server = ServeProcess(tmp_path / "handoff.duckdb").start()
    try:
        for line in RECORDING.read_bytes().splitlines():
            request = urllib.request.Request(
                server.http_url, data=line, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
    finally:
        assert server.stop() == 0, server.log()
    executions = _rows(
        server.db, "SELECT tool_name, kind, call_id, agent_path, run_id FROM executions ORDER BY start_time"
    )
    assert [(e["tool_name"], e["kind"], e["call_id"], e["agent_path"]) for e in executions] == [
        ("transfer_to_weather_agent", HANDOFF, "call_handoff", "coordinator"),
        ("get_weather", "tool", "call_member_paris", "weather_agent"),
    ]
    assert len({e["run_id"] for e in executions}) == 1
    requests = _rows(server.db, "SELECT tool_name, execution_span_id FROM tool_requests")
    assert all(r["execution_span_id"] is not None for r in requests), requests

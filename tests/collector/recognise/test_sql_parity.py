"""Recognition in SQL reads every recorded framework trace exactly as the Python adapters do.

The Python adapters are the oracle. Every recording of tests/frameworks/fixtures (each framework cell,
as its instrumentation really exported it) and the bench's seeded workload is decoded, turned into the
Arrow rows the writer holds, recognised in SQL (collector/recognise/in_sql.py, with the Python adapters
for the spans the SQL leaves them) and compared with the Python reading on every column. The
convention tests' traces are held to the same in tests/collector/recognise/test_conventions.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from bench.workload import build
from collector.decode.from_json import decode_json
from collector.decode.from_protobuf import decode_protobuf
from collector.model.domain import Resource, Span, SpanEvent
from tests.collector.recognise._parity import batch_readings, differences, python_readings
from tests.frameworks.matrix import CELLS, Cell

# What the SQL reads itself, over all recordings: filled by the cell tests, checked at the end.
_READ_IN_SQL: Counter[str] = Counter()


def _recorded_requests(cell: Cell) -> Iterator[list[Span]]:
    for line in (cell.fixture / "otlp.jsonl").read_bytes().splitlines():
        yield decode_json(line).spans


@pytest.mark.parametrize("cell", CELLS, ids=[c.name for c in CELLS])
def test_a_recorded_cell_is_recognised_alike_in_sql_and_in_python(cell: Cell) -> None:
    # Batch by batch, as the writer would recognise them: one request's spans at a time.
    for spans in _recorded_requests(cell):
        sql = batch_readings(spans)
        assert differences(python_readings(spans), sql) == []
        _READ_IN_SQL.update(sql.in_sql)


def test_the_bench_workload_is_recognised_alike_and_wholly_in_sql() -> None:
    workload = build(200, seed=7)
    spans = [s for body in workload.requests for s in decode_protobuf(body).spans]
    sql = batch_readings(spans)
    assert differences(python_readings(spans), sql) == []
    assert sql.in_sql["execution gen_ai"] == workload.tool_spans
    assert sql.in_sql["request gen_ai"] == workload.tool_spans  # every call was requested


def test_the_recordings_exercise_every_sql_adapter() -> None:
    """Parity that no recording exercises would prove nothing: each SQL adapter read real spans."""
    if not _READ_IN_SQL:
        pytest.skip("run with the cell tests above")
    for adapter in ("execution gen_ai", "execution openinference", "execution traceloop", "request gen_ai"):
        assert _READ_IN_SQL[adapter] > 0, f"no recording was read by the SQL adapter {adapter}"


# --------------------------------------------------------------------------------------------------
# The edges of the SQL's claim: values both readers must agree on, or leave to Python
# --------------------------------------------------------------------------------------------------

_RESOURCE = Resource({"service.name": "edge"}, "edge.scope", "1")


def _span(
    n: int,
    name: str,
    attributes: dict[str, Any],
    *,
    events: tuple[SpanEvent, ...] = (),
    status: int = 0,
    message: str = "",
    resource: Resource = _RESOURCE,
) -> Span:
    return Span(
        "ab" * 16,
        f"{n:016x}",
        None,
        name,
        1,
        1_000 * n,
        1_000 * n + 500,
        status,
        message,
        attributes,
        events,
        (),
        resource,
    )


def _tool(n: int, **attributes: Any) -> Span:
    return _span(n, "execute_tool t", {"gen_ai.operation.name": "execute_tool", **attributes})


def _exception(kind: str, message: str) -> SpanEvent:
    return SpanEvent("exception", 1, {"exception.type": kind, "exception.message": message})


_TRACELOOP = Resource({}, "opentelemetry.instrumentation.openai", "1")
_EDGES = [
    _tool(1, **{"gen_ai.tool.call.arguments": "NaN"}),
    _tool(2, **{"gen_ai.tool.call.arguments": '{"a": 1,}'}),
    _tool(3, **{"gen_ai.tool.call.arguments": "[" * 600 + "]" * 600}),
    _tool(34, **{"gen_ai.tool.call.arguments": "[" * 1000 + "]" * 1000}),
    _tool(4, **{"gen_ai.tool.call.arguments": "not json"}),
    _tool(5, **{"gen_ai.tool.name": True}),
    _tool(
        6, **{"gen_ai.tool.name": "t", "gen_ai.tool.call.id": 42, "gen_ai.tool.call.arguments": {"x": [1]}}
    ),
    _tool(7, **{"gen_ai.tool.call.arguments": None}),
    _tool(8, **{"gen_ai.tool.call.result": {"ok": 1.5}, "gen_ai.tool.call.arguments": "null"}),
    _tool(9, status=2, message="ValueError: x\nTraceback ...", events=(_exception("ValueError", "x"),)),
    _tool(10, status=2, events=(_exception("TimeoutError", "slow"),)),
    _tool(11, **{"pydantic_ai.tool.failure_stage": "validate", "logfire.msg": "bad args"}),
    _tool(12, status=2, **{"pydantic_ai.tool.deferral.name": "ApprovalRequired"}),
    _tool(13, **{"tracescore.tool.paused": True, "tracescore.tool.pause_reason": "user_input"}),
    _tool(14, **{"tracescore.tool.paused": "true", "tracescore.tool.from_history": True}),
    _tool(15, **{"gen_ai.tool.name": "(merged tools)"}),
    _tool(16, **{"error.type": "", "gen_ai.tool.status": "error"}),
    _tool(17, events=(_exception("langgraph.errors.GraphInterrupt", "wait"),)),
    _tool(18, **{"gen_ai.tool.name": "adk_request_confirmation"}),
    _tool(32, **{"gen_ai.tool.name": "t", "gen_ai.tool.call.id": 12345678901234567890123}),
    _tool(33, **{"gen_ai.tool.name": "t", "gen_ai.tool.call.id": -123456789012345678}),
    _span(
        19, "running tool", {"gen_ai.tool.name": "t", "tool_arguments": '{"q": "x"}', "tool_response": "42"}
    ),
    _span(
        20,
        "t.tool",
        {"traceloop.span.kind": "tool", "traceloop.entity.input": '{"args": [1], "kwargs": {"x": 2}}'},
        resource=_TRACELOOP,
    ),
    _span(
        21,
        "t.tool",
        {"traceloop.span.kind": "tool", "traceloop.entity.input": '{"args": [], "kwargs": {"x": 2}}'},
        resource=_TRACELOOP,
    ),
    _span(
        22,
        "t.tool",
        {"traceloop.span.kind": "tool", "traceloop.entity.input": '{"kwargs": 1}'},
        resource=_TRACELOOP,
    ),
    _span(
        31,
        "t.tool",
        {"traceloop.span.kind": "tool", "traceloop.entity.input": "{not json"},
        resource=_TRACELOOP,
    ),
    _span(23, "t", {"openinference.span.kind": "TOOL", "input.value": "__REDACTED__", "tool.id": "c"}),
    _span(24, "t", {"openinference.span.kind": "TOOL", "tool.name": "", "input.value": "plain text"}),
    _span(
        25,
        "chat",
        {"gen_ai.output.messages": [{"parts": [{"type": "tool_call", "id": 7, "arguments": "{}"}]}]},
    ),
    _span(
        26,
        "chat",
        {"gen_ai.output.messages": '[{"parts": [{"type": "text", "content": "```json\\n{}\\n```"}]}]'},
    ),
    _span(27, "chat", {"gen_ai.output.messages": '[{"parts": [{"type": "tool_call", "name": 5}]}]'}),
    _span(28, "chat", {"gen_ai.output.messages": "[{]"}),
    _span(29, "chat", {"gen_ai.output.messages": '[{"parts": {"type": "tool_call"}}, 3, {"parts": [4]}]'}),
    _span(
        30,
        "chat",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.output.messages": '[{"parts": [{"type": "tool_call"}]}]',
        },
    ),
]


def test_the_edges_of_what_sql_claims_are_read_as_python_reads_them() -> None:
    sql = batch_readings(_EDGES)
    assert differences(python_readings(_EDGES), sql) == []
    # Not vacuous: the SQL itself read the plain ones, Python the doubtful ones.
    assert sql.in_sql["execution gen_ai"] >= 10
    assert sql.in_sql["execution traceloop"] == 3
    assert sql.in_sql["request gen_ai"] == 1

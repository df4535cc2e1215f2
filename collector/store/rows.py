"""Domain records → Arrow tables shaped like the stored tables (one Arrow insert per batch)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from collector.model.arrow import pa
from collector.model.domain import Span
from collector.model.jsontext import to_json
from collector.recognise.span import Recognised
from collector.store._resolve import ResolvedExecution, ResolvedRequest, RunSummary


@dataclass(frozen=True, slots=True)
class Schemas:
    """The Arrow schemas of the stored tables' rows (built on first use: pyarrow is imported then)."""

    span: pa.Schema
    execution: pa.Schema
    request: pa.Schema
    run_trace: pa.Schema
    run_turn: pa.Schema
    seq_index: int  # the writer stamps these two columns of the spans' rows
    received_at_index: int


@functools.cache
def schemas() -> Schemas:
    ts_ns = pa.timestamp("ns")
    ts_us = pa.timestamp("us")

    span = pa.schema(
        [
            ("trace_id", pa.string()),
            ("span_id", pa.string()),
            ("parent_span_id", pa.string()),
            ("name", pa.string()),
            ("kind", pa.uint8()),
            ("start_time", ts_ns),
            ("end_time", ts_ns),
            ("duration_ms", pa.float64()),
            ("status_code", pa.uint8()),
            ("status_message", pa.string()),
            ("service_name", pa.string()),
            ("scope_name", pa.string()),
            ("scope_version", pa.string()),
            ("attributes", pa.string()),
            ("resource_attributes", pa.string()),
            ("events", pa.string()),
            ("links", pa.string()),
            ("trace_state", pa.string()),
            ("flags", pa.uint32()),
            ("dropped_attributes_count", pa.uint32()),
            ("dropped_events_count", pa.uint32()),
            ("dropped_links_count", pa.uint32()),
            ("ingest_seq", pa.int64()),
            ("received_at", ts_us),
        ]
    )

    execution = pa.schema(
        [
            ("run_id", pa.string()),
            ("task_id", pa.string()),
            ("trace_id", pa.string()),
            ("span_id", pa.string()),
            ("parent_span_id", pa.string()),
            ("tool_name", pa.string()),
            ("call_id", pa.string()),
            ("call_id_source", pa.string()),
            ("arguments", pa.string()),
            ("arguments_raw", pa.string()),
            ("arguments_error", pa.string()),
            ("arguments_source", pa.string()),
            ("result", pa.string()),
            ("error", pa.bool_()),
            ("error_type", pa.string()),
            ("error_message", pa.string()),
            ("paused", pa.bool_()),
            ("pause_reason", pa.string()),
            ("from_history", pa.bool_()),
            ("start_time", ts_ns),
            ("end_time", ts_ns),
            ("duration_ms", pa.float64()),
            ("agent_path", pa.string()),
            ("agent_name", pa.string()),
            ("session_id", pa.string()),
            ("service_name", pa.string()),
            ("convention", pa.string()),
            ("scope_name", pa.string()),
            ("ingest_seq", pa.int64()),
            ("kind", pa.string()),
            ("call_index", pa.int32()),
        ]
    )

    request = pa.schema(
        [
            ("run_id", pa.string()),
            ("task_id", pa.string()),
            ("trace_id", pa.string()),
            ("span_id", pa.string()),
            ("position", pa.int32()),
            ("tool_name", pa.string()),
            ("call_id", pa.string()),
            ("arguments", pa.string()),
            ("arguments_raw", pa.string()),
            ("arguments_error", pa.string()),
            ("round", pa.int32()),
            ("requested_at", ts_ns),
            ("agent_path", pa.string()),
            ("encoding", pa.string()),
            ("execution_span_id", pa.string()),
            ("ingest_seq", pa.int64()),
            ("execution_call_index", pa.int32()),
        ]
    )

    run_trace = pa.schema(
        [
            ("run_id", pa.string()),
            ("trace_id", pa.string()),
            ("root_span_id", pa.string()),
            ("task_id", pa.string()),
            ("service_name", pa.string()),
            ("agent_name", pa.string()),
            ("session_id", pa.string()),
            ("start_time", ts_ns),
            ("end_time", ts_ns),
            ("n_spans", pa.int32()),
            ("n_executions", pa.int32()),
            ("n_requests", pa.int32()),
            ("attributes", pa.string()),
            ("status", pa.string()),
            ("version", pa.int32()),
            ("completed_at", ts_us),
            ("min_seq", pa.int64()),
            ("max_seq", pa.int64()),
        ]
    )

    run_turn = pa.schema(
        [
            ("run_id", pa.string()),
            ("trace_id", pa.string()),
            ("conversation_id", pa.string()),
            ("turn_index", pa.int32()),
            ("last_turn", pa.bool_()),
        ]
    )
    return Schemas(
        span,
        execution,
        request,
        run_trace,
        run_turn,
        span.get_field_index("ingest_seq"),
        span.get_field_index("received_at"),
    )


_U8 = 2**8 - 1
_U32 = 2**32 - 1


def _clamp(value: int, limit: int) -> int:
    # Open proto3 enums and JSON numbers can carry any integer; the columns are fixed-width.
    return min(max(value, 0), limit)


def _table(schema: pa.Schema, rows: Sequence[tuple[Any, ...]]) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    return pa.Table.from_arrays(
        [pa.array(column, type=f.type) for column, f in zip(columns, schema, strict=True)], schema=schema
    )


def _events_json(s: Span) -> str | None:
    return to_json(
        [{"name": e.name, "time_unix_nano": e.time_ns, "attributes": e.attributes} for e in s.events]
    )


def _links_json(s: Span) -> str | None:
    return to_json(
        [{"trace_id": k.trace_id, "span_id": k.span_id, "attributes": k.attributes} for k in s.links]
    )


def _u8(value: int) -> int:
    return value if 0 <= value <= _U8 else _clamp(value, _U8)


def _u32(value: int) -> int:
    return value if 0 <= value <= _U32 else _clamp(value, _U32)


def spans_table(spans: Sequence[Span], seq: int, received_us: int) -> pa.Table:
    # Column by column: one tight comprehension per column beats building row tuples and transposing.
    columns: list[list[Any]] = [
        [s.trace_id for s in spans],
        [s.span_id for s in spans],
        [s.parent_span_id for s in spans],
        [s.name for s in spans],
        [_u8(s.kind) for s in spans],
        [s.start_ns for s in spans],
        [s.end_ns for s in spans],
        [(s.end_ns - s.start_ns) / 1e6 for s in spans],
        [_u8(s.status_code) for s in spans],
        [s.status_message or None for s in spans],
        [s.resource.service_name for s in spans],
        [s.resource.scope_name or None for s in spans],
        [s.resource.scope_version or None for s in spans],
        [to_json(s.attributes) for s in spans],
        [s.resource.attributes_json or to_json(s.resource.attributes) for s in spans],
        [_events_json(s) if s.events else "[]" for s in spans],
        [_links_json(s) if s.links else "[]" for s in spans],
        [s.trace_state or None for s in spans],
        [_u32(s.flags) for s in spans],
        [_u32(s.dropped_attributes_count) for s in spans],
        [_u32(s.dropped_events_count) for s in spans],
        [_u32(s.dropped_links_count) for s in spans],
        [seq] * len(spans),
        [received_us] * len(spans),
    ]
    span_schema = schemas().span
    return pa.Table.from_arrays(
        [pa.array(column, type=f.type) for column, f in zip(columns, span_schema, strict=True)],
        schema=span_schema,
    )


# A result arrives as text that may or may not be JSON: DuckDB decides, vectorised, while inserting
# (Python would parse every result only to learn that).
EXECUTION_EXPRESSIONS = {
    "result": "CASE WHEN json_valid(result) THEN result::JSON ELSE to_json(result) END",
}


def executions_table(executions: Sequence[tuple[ResolvedExecution, int]]) -> pa.Table:
    rows = []
    for resolved, seq in executions:
        e, place = resolved.execution, resolved.placement
        rows.append(
            (
                place.run_id,
                place.task_id,
                e.trace_id,
                e.span_id,
                e.parent_span_id,
                e.tool_name,
                resolved.call_id,
                resolved.call_id_source,
                resolved.arguments.json_text(),
                resolved.arguments.raw,
                resolved.arguments.error,
                resolved.arguments_source,
                e.result if isinstance(e.result, str) else to_json(e.result),
                e.error,
                e.error_type,
                e.error_message,
                e.paused,
                e.pause_reason,
                e.from_history,
                e.start_ns,
                e.end_ns,
                (e.end_ns - e.start_ns) / 1e6,
                place.agent_path,
                place.agent_name,
                place.session_id,
                e.service_name,
                e.convention,
                e.scope_name or None,
                seq,
                e.kind,
                e.call_index,
            )
        )
    return _table(schemas().execution, rows)


def requests_table(requests: Sequence[tuple[ResolvedRequest, int]]) -> pa.Table:
    rows = []
    for resolved, seq in requests:
        r, place = resolved.request, resolved.placement
        rows.append(
            (
                place.run_id,
                place.task_id,
                r.trace_id,
                r.span_id,
                r.position,
                r.tool_name,
                r.call_id,
                r.arguments.json_text(),
                r.arguments.raw,
                r.arguments.error,
                resolved.round,
                r.requested_ns,
                place.agent_path,
                r.encoding,
                resolved.execution_span_id,
                seq,
                resolved.execution_call_index,
            )
        )
    return _table(schemas().request, rows)


def run_traces_table(runs: Sequence[tuple[RunSummary, int, int, int]], completed_us: int) -> pa.Table:
    """Rows of (summary, version, min_seq, max_seq)."""
    rows = [
        (
            r.run_id,
            r.trace_id,
            r.root_span_id,
            r.task_id,
            r.service_name,
            r.agent_name,
            r.session_id,
            r.start_ns,
            r.end_ns,
            r.n_spans,
            r.n_executions,
            r.n_requests,
            to_json(r.attributes),
            "complete",
            version,
            completed_us,
            min_seq,
            max_seq,
        )
        for r, version, min_seq, max_seq in runs
    ]
    return _table(schemas().run_trace, rows)


def run_turns_table(runs: Sequence[tuple[RunSummary, int, int, int]]) -> pa.Table:
    """Rows for the runs that are turns of a conversation (the others have none)."""
    rows = [
        (r.run_id, r.trace_id, r.conversation_id, r.turn_index, r.last_turn)
        for r, _, _, _ in runs
        if r.conversation_id is not None
    ]
    return _table(schemas().run_turn, rows)


@dataclass(slots=True)
class PreparedSpans:
    """Spans as the writer takes them: their (trace id, span id), what recognition read off each, and
    their rows (ingest sequence and arrival time are the writer's to stamp: see `stamped`)."""

    keys: list[tuple[str, str]]
    recognised: list[Recognised]
    rows: pa.Table

    def __len__(self) -> int:
        return len(self.keys)


def stamped(rows: pa.Table, seq: int, received_us: int) -> pa.Table:
    """The rows with the writer's ingest sequence number and arrival time."""
    shapes = schemas()
    for index, value in ((shapes.seq_index, seq), (shapes.received_at_index, received_us)):
        field = shapes.span.field(index)
        rows = rows.set_column(index, field, pa.repeat(pa.scalar(value, field.type), rows.num_rows))
    return rows

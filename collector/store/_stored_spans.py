"""Rows of the `spans` table → domain spans, so recognition can be re-run on what was stored."""

from __future__ import annotations

import json
from typing import Any

import duckdb

from collector.model.domain import Resource, Span, SpanEvent, SpanLink

_COLUMNS = (
    "trace_id, span_id, parent_span_id, name, kind, epoch_ns(start_time), epoch_ns(end_time), status_code, "
    "coalesce(status_message, ''), coalesce(scope_name, ''), coalesce(scope_version, ''), attributes, "
    "resource_attributes, events, links, coalesce(trace_state, ''), flags, ingest_seq"
)


def _loads(text: str | None, default: Any) -> Any:
    return json.loads(text) if text else default


def _span(row: tuple[Any, ...]) -> tuple[Span, int]:
    resource = Resource(_loads(row[12], {}), row[9], row[10])
    span = Span(
        trace_id=row[0],
        span_id=row[1],
        parent_span_id=row[2],
        name=row[3],
        kind=row[4],
        start_ns=row[5] or 0,
        end_ns=row[6] or 0,
        status_code=row[7],
        status_message=row[8],
        attributes=_loads(row[11], {}),
        events=tuple(
            SpanEvent(e.get("name", ""), e.get("time_unix_nano", 0), e.get("attributes", {}))
            for e in _loads(row[13], [])
        ),
        links=tuple(
            SpanLink(k.get("trace_id", ""), k.get("span_id", ""), k.get("attributes", {}))
            for k in _loads(row[14], [])
        ),
        resource=resource,
        trace_state=row[15],
        flags=row[16] or 0,
    )
    return span, row[17]


def load_traces(connection: duckdb.DuckDBPyConnection, trace_ids: list[str]) -> list[tuple[Span, int]]:
    """Every stored span of these traces, with its ingest sequence number."""
    if not trace_ids:
        return []
    rows = connection.execute(
        f"SELECT {_COLUMNS} FROM spans WHERE trace_id IN (SELECT unnest(?::VARCHAR[]))", [trace_ids]
    ).fetchall()
    return [_span(row) for row in rows]

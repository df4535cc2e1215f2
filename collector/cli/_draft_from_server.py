"""The spans a running `tracescore serve` holds, read through its API for `spec draft`: every span of
its complete traces, from the export stream (`POST /api/v1/export`, docs/export.md's `otel_traces`
columns), back into domain spans. The draft then goes through a scratch store exactly as a draft from
ClickHouse does, since the server holds the database file and no other process may open it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb

from collector.cli import _client as client
from collector.clickhouse.spans import span_from_row
from collector.model.domain import Span

# The export's columns as ClickHouse's reader lists them (collector/clickhouse/spans.py), times in
# nanoseconds and maps as lists of key-value pairs, so that each row reads as a ClickHouse row does.
_COLUMNS = """
    TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, map_entries(ResourceAttributes),
    ScopeName, ScopeVersion, map_entries(SpanAttributes), epoch_ns("Timestamp"), "Duration", StatusCode,
    StatusMessage,
    list_transform(Events, lambda e: epoch_ns(e."Timestamp")),
    list_transform(Events, lambda e: e.Name),
    list_transform(Events, lambda e: map_entries(e.Attributes)),
    list_transform(Links, lambda l: l.TraceId),
    list_transform(Links, lambda l: l.SpanId),
    list_transform(Links, lambda l: l.TraceState),
    list_transform(Links, lambda l: map_entries(l.Attributes))
"""
_MAPS = (6, 9)  # positions of the two maps in a row; events' and links' maps are lists of them
_MAP_LISTS = (16, 20)

# Traces not complete on the server: drafting from them would judge half a run.
_OPEN_TRACES = (
    "SELECT DISTINCT trace_id FROM spans "
    "EXCEPT SELECT trace_id FROM run_traces GROUP BY trace_id HAVING bool_and(status = 'complete')"
)


def _pairs(entries: list[dict[str, Any]] | None) -> dict[str, str]:
    return {e["key"]: e["value"] for e in entries or ()}


def _row(values: tuple[Any, ...]) -> list[Any]:
    row = list(values)
    for i in _MAPS:
        row[i] = _pairs(row[i])
    for i in _MAP_LISTS:
        row[i] = [_pairs(entries) for entries in row[i] or ()]
    for i in (14, 15, 17, 18, 19):
        row[i] = row[i] or []
    return row


def server_spans(server: str, open_traces: set[str] | None = None) -> Iterator[Span]:
    """Every span of the server's complete traces (those of `open_traces`, asked of the server when not
    given, are left out)."""
    if open_traces is None:
        answer = client.post(server, "/api/v1/sql", {"query": _OPEN_TRACES})
        rows = answer.get("rows", []) if isinstance(answer, dict) else []
        if isinstance(answer, dict) and answer.get("truncated"):
            raise client.ServerError(f"{server}: more than {len(rows)} traces are open; try again later")
        open_traces = {str(r[0]) for r in rows}
    reader = client.arrow_stream(server, "/api/v1/export", {"table": "otel_traces"})
    local = duckdb.connect()
    try:
        local.register("exported", reader)
        for values in local.execute(f"SELECT {_COLUMNS} FROM exported").fetchall():
            if values[0] not in open_traces:
                yield span_from_row(_row(values))
    finally:
        local.close()

"""Finding the runs tracescore could not read, from their stored spans (scoring/evidence/reading.py).

Scoring asks only about runs with no execution and no requested call (the others were read), so the
spans read back here are those of runs that are empty or unread: few, where tracescore reads the
pipeline. Each span is read again by the recognition that stored it (`collector.recognise.reading`),
and a run is unread when none of the spans of its traces is read. A trace holding several runs is
read for all of them as soon as one span of it is: such runs come from agent spans, which are read.

Installed into scoring when this module is imported (collector/store/database.py imports it, so every
path that opens a tracescore file, `serve`, `score` and the ClickHouse scratch store, judges alike).
"""

from __future__ import annotations

from collections import Counter

import duckdb

from collector.recognise.reading import is_read
from collector.store._stored_spans import load_traces
from scoring.evidence.reading import RunRanges, ScopeSpans, Unread, find_unread_with

# Traces read back per query: bounds what one look-up holds in memory.
_TRACES_PER_QUERY = 500


def unread_traces(
    connection: duckdb.DuckDBPyConnection, trace_ids: list[str]
) -> dict[str, Counter[tuple[str, str]]]:
    """Of these traces, those none of whose stored spans is read, with their spans per (scope, version)."""
    scopes: dict[str, Counter[tuple[str, str]]] = {}
    read: set[str] = set()
    for start in range(0, len(trace_ids), _TRACES_PER_QUERY):
        for span, _ in load_traces(connection, trace_ids[start : start + _TRACES_PER_QUERY]):
            if span.trace_id in read:
                continue
            if is_read(span):
                read.add(span.trace_id)
                scopes.pop(span.trace_id, None)
                continue
            resource = span.resource
            scopes.setdefault(span.trace_id, Counter())[(resource.scope_name, resource.scope_version)] += 1
    return scopes


def find_unread(connection: duckdb.DuckDBPyConnection, ranges: RunRanges) -> dict[str, Unread]:
    traces = sorted({trace for trace_ids, _, _ in ranges.values() for trace in trace_ids})
    unread = unread_traces(connection, traces)
    found: dict[str, Unread] = {}
    for run_id, (trace_ids, _, _) in ranges.items():
        if not trace_ids or any(trace not in unread for trace in trace_ids):
            continue
        total: Counter[tuple[str, str]] = Counter()
        for trace in trace_ids:
            total.update(unread[trace])
        found[run_id] = Unread(tuple(ScopeSpans(name, version, n) for (name, version), n in total.items()))
    return found


find_unread_with(find_unread)

"""Finding the runs tracescore could not read, from their stored spans (scoring/evidence/reading.py).

Scoring asks only about runs with no execution. For one with no requested call either, its spans are
read back (few, where tracescore reads the pipeline), each read again by the recognition that stored it
(`collector.recognise.reading`): the run is unread when none of the spans of its traces is read. A trace
holding several runs is read for all of them as soon as one span of it is: such runs come from agent
spans, which are read. A run whose model requested calls is unread only when its traces show a known
gap (`KNOWN_GAPS`), which one query over the span names tells.

Installed into scoring when this module is imported (collector/store/database.py imports it, so every
path that opens a tracescore file, `serve`, `score` and the ClickHouse scratch store, judges alike).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Set as AbstractSet

import duckdb

from collector.recognise.reading import KNOWN_GAPS, KnownGap, is_read
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


def _gap_traces(
    connection: duckdb.DuckDBPyConnection, gap: KnownGap, trace_ids: list[str]
) -> dict[str, Counter[str]]:
    """Of these traces, those showing the gap, with the gap scope's spans per scope version."""
    rows = connection.execute(
        "SELECT trace_id, coalesce(scope_version, ''), count(*), bool_or(name = ?), bool_or(name = ?) "
        "FROM spans WHERE trace_id IN (SELECT unnest(?::VARCHAR[])) AND scope_name = ? GROUP BY ALL",
        [gap.shows, gap.lacks, trace_ids, gap.scope],
    ).fetchall()
    versions: dict[str, Counter[str]] = {}
    shows: set[str] = set()
    lacks: set[str] = set()
    for trace_id, version, spans, shown, lacking in rows:
        versions.setdefault(trace_id, Counter())[version] += spans
        if shown:
            shows.add(trace_id)
        if lacking:
            lacks.add(trace_id)
    return {trace: versions[trace] for trace in shows - lacks}


def _gaps(connection: duckdb.DuckDBPyConnection, ranges: RunRanges) -> dict[str, Unread]:
    traces = sorted({trace for trace_ids, _, _ in ranges.values() for trace in trace_ids})
    found: dict[str, Unread] = {}
    for gap in KNOWN_GAPS if traces else ():
        showing = _gap_traces(connection, gap, traces)
        for run_id, (trace_ids, _, _) in ranges.items():
            if run_id in found or not any(trace in showing for trace in trace_ids):
                continue
            total: Counter[str] = Counter()
            for trace in trace_ids:
                total.update(showing.get(trace, Counter()))
            scopes = tuple(ScopeSpans(gap.scope, version, n) for version, n in total.items())
            found[run_id] = Unread(scopes, known_gap=gap.what)
    return found


def find_unread(
    connection: duckdb.DuckDBPyConnection, ranges: RunRanges, requested: AbstractSet[str]
) -> dict[str, Unread]:
    found = _gaps(connection, {run: ranges[run] for run in requested if run in ranges})
    ranges = {run: entry for run, entry in ranges.items() if run not in requested}
    traces = sorted({trace for trace_ids, _, _ in ranges.values() for trace in trace_ids})
    unread = unread_traces(connection, traces)
    for run_id, (trace_ids, _, _) in ranges.items():
        if not trace_ids or any(trace not in unread for trace in trace_ids):
            continue
        total: Counter[tuple[str, str]] = Counter()
        for trace in trace_ids:
            total.update(unread[trace])
        found[run_id] = Unread(tuple(ScopeSpans(name, version, n) for (name, version), n in total.items()))
    return found


find_unread_with(find_unread)

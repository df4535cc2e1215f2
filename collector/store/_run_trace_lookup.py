"""Which traces were completed before, by their `run_traces` rows: the writer asks about the traces new to
this process (a restart, or a late span after the trace left memory) that its filter cannot rule out
(collector/store/_stored_ids.py). `run_traces` has no index (collector/store/schema.py, KEYLESS): the
traces are found through `run_keys` (scoring/evidence/run_keys.py), and the filter keeps even that rare.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import duckdb

from scoring.evidence.run_keys import seq_range, within


@dataclass(frozen=True, slots=True)
class StoredTrace:
    version: int  # the highest stored run version
    seqs: tuple[int, int]  # the seqs its rows lie within (collector/store/_tracker.py, TraceState)


def stored_traces(
    connection: duckdb.DuckDBPyConnection, trace_ids: Collection[str]
) -> dict[str, StoredTrace]:
    """Each of these traces that was completed before, with its stored version and seq."""
    ids = sorted(trace_ids)
    condition, bounds = within(seq_range(connection, ids, "trace_key"))
    rows = connection.execute(
        "SELECT trace_id, max(version), min(min_seq), max(max_seq) FROM run_traces "
        f"WHERE {condition} AND trace_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY trace_id",
        [*bounds, ids],
    ).fetchall()
    return {trace_id: StoredTrace(version, (low, high)) for trace_id, version, low, high in rows}

"""Which traces were completed before, by their `run_traces` rows: the writer asks per group commit about
the traces new to this process (a restart, or a late span after the trace left memory).

The ids go in as an IN list of parameters, 500 at a time, which DuckDB answers from the `trace_id`
index; joined from an unnested list, as before, it planned a hash join over a scan of the whole table,
so each group commit's lookup grew with the history (`python -m bench.spanning_probe`).
"""

from __future__ import annotations

from collections.abc import Collection

import duckdb

_PROBE_IDS = 500


def stored_trace_versions(
    connection: duckdb.DuckDBPyConnection, trace_ids: Collection[str]
) -> dict[str, int]:
    """The highest stored run version of each of these traces that has one (was completed before)."""
    ids = sorted(trace_ids)
    versions: dict[str, int] = {}
    for start in range(0, len(ids), _PROBE_IDS):
        chunk = ids[start : start + _PROBE_IDS]
        rows = connection.execute(
            "SELECT trace_id, max(version) FROM run_traces "
            f"WHERE trace_id IN ({', '.join('?' * len(chunk))}) GROUP BY trace_id",
            chunk,
        ).fetchall()
        versions.update(rows)
    return versions

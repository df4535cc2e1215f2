"""Runs set-based scoring leaves to the Python judge: those tracescore could not read.

Their verdicts are `error` (scoring/evidence/reading.py), which the SQL verdict query does not write:
each spec's query is given its runs without them, and the Python judge gives theirs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import duckdb
import pyarrow as pa

from scoring.evidence.reading import Unread, unread_runs
from scoring.verdict.arrow_view import register_arrow


def unread_of(connection: duckdb.DuckDBPyConnection, runs: str) -> dict[str, Unread]:
    """The runs of the relation `runs` with no execution that are unread."""
    rows = connection.execute(
        f"SELECT r.run_id, list(t.trace_id), min(t.min_seq), max(t.max_seq), sum(t.n_requests) > 0 "
        f"FROM {runs} r JOIN run_traces t ON t.run_id = r.run_id "
        # Runs with a trace of no execution first: grouping every run's traces cost 6x more (500 k runs).
        "WHERE r.run_id IN (SELECT run_id FROM run_traces WHERE n_executions = 0) "
        "GROUP BY r.run_id HAVING sum(t.n_executions) = 0"
    ).fetchall()
    ranges = {row[0]: (list(row[1]), int(row[2]), int(row[3])) for row in rows}
    return unread_runs(connection, ranges, {row[0] for row in rows if row[4]})


def without(
    connection: duckdb.DuckDBPyConnection, chosen: str, unread: dict[str, Unread]
) -> tuple[str, Callable[[], None]]:
    """The relation `chosen` without the unread runs, and what to call when done with it."""
    if not unread:
        return chosen, lambda: None
    name = f"_tracescore_unread_{uuid.uuid4().hex}"
    register_arrow(connection, name, pa.table({"run_id": pa.array(sorted(unread), pa.string())}))
    relation = f"(SELECT * FROM {chosen} u WHERE u.run_id NOT IN (SELECT run_id FROM {name}))"

    def release() -> None:
        connection.unregister(name)

    return relation, release

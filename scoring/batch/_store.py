"""Set-based verdicts into the `verdicts` table, row for row what `store_verdicts` writes."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from scoring.spec.specs import Spec
from scoring.verdict.table import VERDICT_PARTITIONS

STORED_COLUMNS = (
    "run_id, trace_id, task_id, spec, spec_fingerprint, profile, label, passed, value, reason, checks, "
    "missing_tools, additional_tools, failed_argument_checks, latency_violations, run_version, "
    "schema_version, verdict"
)


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)  # as store_verdicts stamps its rows


def insert(
    connection: duckdb.DuckDBPyConnection, spec: Spec | None, runs: str, source: str, at: datetime
) -> int:
    """Store the verdict rows of `source` (the spec's, one per run of `runs`), replacing those of the
    same run version: deleted from every partition first, as the key is the writers' to keep
    (scoring/verdict/table.py); the look-up costs less than the DELETE it saves when nothing is
    replaced. `spec` None: `runs` holds a family's (run, spec) rows, whose `spec_name` names each
    verdict."""
    same_spec, params = ("v.spec = r.spec_name", []) if spec is None else ("v.spec = ?", [spec.name])
    replaces = connection.execute(
        f"SELECT 1 FROM verdicts v JOIN {runs} r ON v.run_id = r.run_id AND v.run_version = r.version "
        f"WHERE {same_spec} LIMIT 1",
        params,
    ).fetchone()
    for partition in VERDICT_PARTITIONS if replaces else ():
        connection.execute(
            f"DELETE FROM {partition} v USING {runs} r WHERE v.run_id = r.run_id "
            f"AND v.run_version = r.version AND {same_spec}",
            params,
        )
    row = connection.execute(
        f"INSERT INTO {VERDICT_PARTITIONS[0]} ({STORED_COLUMNS}, scored_at) SELECT {STORED_COLUMNS}, ? "
        f"FROM {source}",
        [at],
    ).fetchone()
    return int(row[0]) if row else 0

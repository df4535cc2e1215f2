"""The `verdicts` table and the `task_results` view (documented in docs/storage.md).

A verdict is keyed on (run_id, spec, run_version): re-scoring a run with the same spec replaces its
verdict for that version of the run; a run recomputed after a late span gets a new row, so the history
of a run's verdicts stays queryable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime

import duckdb

from scoring._verdict import Verdict

DDL = (
    """
    CREATE TABLE IF NOT EXISTS verdicts (
        run_id VARCHAR NOT NULL,
        trace_id VARCHAR NOT NULL,
        task_id VARCHAR,
        spec VARCHAR NOT NULL,
        spec_fingerprint VARCHAR NOT NULL,
        profile VARCHAR NOT NULL,
        label VARCHAR NOT NULL,
        passed BOOLEAN,
        value DOUBLE,
        reason VARCHAR,
        checks JSON,
        missing_tools JSON,
        additional_tools JSON,
        failed_argument_checks JSON,
        latency_violations JSON,
        run_version INTEGER NOT NULL,
        schema_version INTEGER NOT NULL,
        scored_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
        verdict JSON NOT NULL,
        PRIMARY KEY (run_id, spec, run_version)
    )""",
    # The latest verdict of each (run, spec), folded per task: pass rates without pass@k (see `report`).
    """
    CREATE OR REPLACE VIEW task_results AS
    WITH latest AS (
        SELECT * FROM verdicts
        QUALIFY row_number() OVER (PARTITION BY run_id, spec ORDER BY run_version DESC, scored_at DESC) = 1
    )
    SELECT
        task_id AS task,
        spec,
        any_value(spec_fingerprint) AS spec_fingerprint,
        count(*) AS n_runs,
        count(*) FILTER (WHERE label <> 'error') AS n_scored,
        count(*) FILTER (WHERE label = 'pass') AS n_passed,
        count(*) FILTER (WHERE label = 'pass') / nullif(count(*) FILTER (WHERE label <> 'error'), 0)
            AS pass_rate,
        avg(value) FILTER (WHERE label <> 'error') AS mean_value,
        count(*) FILTER (WHERE label = 'pass') > 0
            AND count(*) FILTER (WHERE label = 'fail') > 0 AS in_learning_zone
    FROM latest
    GROUP BY task_id, spec""",
)


def ensure_verdict_schema(connection: duckdb.DuckDBPyConnection) -> None:
    for statement in DDL:
        connection.execute(statement)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def store_verdicts(connection: duckdb.DuckDBPyConnection, verdicts: Iterable[Verdict]) -> int:
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = []
    for v in verdicts:
        data = v.to_dict()
        rows.append(
            (
                v.run_id,
                v.trace_id,
                v.task,
                v.spec,
                v.spec_fingerprint,
                v.profile,
                v.label,
                v.passed,
                v.value,
                v.reason,
                _json(data["checks"]),
                _json(data["missing_tools"]),
                _json(data["additional_tools"]),
                _json(data["failed_argument_checks"]),
                _json(data["latency_violations"]),
                v.run_version,
                v.schema_version,
                _json(data),
                now,
            )
        )
    if not rows:
        return 0
    import pyarrow as pa

    columns = [
        "run_id",
        "trace_id",
        "task_id",
        "spec",
        "spec_fingerprint",
        "profile",
        "label",
        "passed",
        "value",
        "reason",
        "checks",
        "missing_tools",
        "additional_tools",
        "failed_argument_checks",
        "latency_violations",
        "run_version",
        "schema_version",
        "verdict",
        "scored_at",
    ]
    table = pa.Table.from_arrays(
        [pa.array(list(column)) for column in zip(*rows, strict=True)], names=columns
    )
    connection.register("_batch_verdicts", table)
    try:
        names = ", ".join(columns)
        connection.execute(f"INSERT OR REPLACE INTO verdicts ({names}) SELECT {names} FROM _batch_verdicts")
    finally:
        connection.unregister("_batch_verdicts")
    return len(rows)

"""The `verdicts` table and the `task_results` view (documented in docs/storage.md).

A verdict is keyed on (run_id, spec, run_version): re-scoring a run with the same spec replaces its
verdict for that version of the run; a run recomputed after a late span gets a new row, so the history
of a run's verdicts stays queryable. The key is kept by the writers (DELETE, then INSERT), not by a
primary key: DuckDB holds an index in memory whole, and the verdicts grow with the history
(collector/store/schema.py, KEYLESS). Files made with the primary key get their partitions rebuilt.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import duckdb

from scoring.verdict.arrow_view import register_arrow
from scoring.verdict.ddl import execute_ddl, rebuild_table, supports_zstd
from scoring.verdict.record import Verdict, verdict_text

# Verdict JSON is most of what a scoring run writes (~2 kB a verdict with its reconciliation). ZSTD
# stores it ~4x smaller than DuckDB's default string compression, in half the time (bench/README.md).
# Files whose storage version predates it get the plain table (scoring/verdict/ddl.py).

# Two partitions behind a view named `verdicts`, as the collector's written tables (docs/storage.md,
# "Partitions"): online scoring stores into the one a checkpoint is not writing, because until DuckDB
# 2.1 a commit appending to a table the checkpoint writes waits for it, and holds every other commit
# of the file meanwhile, the writer's too (bench/README.md, "Checkpoints").
VERDICT_PARTITIONS = ("verdicts_p0", "verdicts_p1")

_TABLE = """
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
        checks JSON USING COMPRESSION zstd,
        missing_tools JSON,
        additional_tools JSON,
        failed_argument_checks JSON,
        latency_violations JSON,
        run_version INTEGER NOT NULL,
        schema_version INTEGER NOT NULL,
        scored_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
        verdict JSON NOT NULL USING COMPRESSION zstd
    )"""
# Conversation verdicts (issue 21) are keyed on the conversation id in `run_id`; this column tells
# them apart (NULL for a run's verdict). Added to files made before it.
_CONVERSATION_COLUMN = "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS conversation_id VARCHAR"


def _partition_ddl(name: str) -> str:
    return _TABLE.replace("EXISTS verdicts (", f"EXISTS {name} (", 1)


DDL = (
    *(_partition_ddl(p) for p in VERDICT_PARTITIONS),
    *(_CONVERSATION_COLUMN.format(table=p) for p in VERDICT_PARTITIONS),
    # BY NAME: a file's verdicts from before the partitions are partition 0, conversation_id last.
    "CREATE OR REPLACE VIEW verdicts AS "
    + " UNION ALL BY NAME ".join(f"SELECT * FROM {p}" for p in VERDICT_PARTITIONS),
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
    """Create the verdict tables and views; a `verdicts` table from before the partitions becomes
    partition 0 in place (renamed, in one transaction)."""
    rows = connection.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = 'verdicts'"
    ).fetchall()
    if rows[0][0]:
        connection.begin()
        try:
            connection.execute(_CONVERSATION_COLUMN.format(table="verdicts"))
            connection.execute(f"DROP TABLE IF EXISTS {VERDICT_PARTITIONS[0]}")
            connection.execute(f"ALTER TABLE verdicts RENAME TO {VERDICT_PARTITIONS[0]}")
            connection.commit()
        except BaseException:
            connection.rollback()
            raise
    for statement in DDL:
        execute_ddl(connection, statement)
    _without_key(connection)


def _without_key(connection: duckdb.DuckDBPyConnection) -> None:
    """Rebuild, in one transaction, each verdict partition a file made with a primary key."""
    rows = connection.execute(
        "SELECT table_name FROM duckdb_constraints() WHERE schema_name = 'main' "
        "AND constraint_type = 'PRIMARY KEY' AND table_name IN (SELECT unnest(?::VARCHAR[]))",
        [list(VERDICT_PARTITIONS)],
    ).fetchall()
    if not rows:
        return
    zstd = supports_zstd(connection)
    connection.begin()
    try:
        for (partition,) in rows:
            rebuild_table(connection, partition, _partition_ddl, zstd=zstd)
        connection.commit()
    except BaseException:
        connection.rollback()
        raise


_PART_COLUMNS = (
    "checks",
    "missing_tools",
    "additional_tools",
    "failed_argument_checks",
    "latency_violations",
)
_COLUMNS = (
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
    "run_version",
    "schema_version",
    "verdict",
    "scored_at",
)


def verdict_json(verdict: Verdict) -> str:
    """The stored (and streamed) JSON form of a verdict: computed once per verdict."""
    return verdict_text(verdict)


def store_verdicts(
    connection: duckdb.DuckDBPyConnection,
    verdicts: Iterable[Verdict],
    texts: Sequence[str] | None = None,
    *,
    in_transaction: bool = False,
    into: str = VERDICT_PARTITIONS[0],
    replace: bool = True,
) -> int:
    """Store verdicts (replacing one with the same run, spec and run version, in either partition) into
    the partition `into`; `texts` are their `verdict_json`, when the caller already has them. The
    replacement is one transaction of its own, unless the caller says it holds one open
    (`in_transaction`). `replace` False skips the DELETE, which reads every stored verdict (the key has
    no index): only for verdicts whose key no stored verdict can have."""
    if into not in VERDICT_PARTITIONS:
        raise ValueError(f"verdicts are stored into one of {VERDICT_PARTITIONS}, not {into!r}")
    batch = list(verdicts)
    if not batch:
        return 0
    documents = list(texts) if texts is not None else [verdict_json(v) for v in batch]
    now = datetime.now(UTC).replace(tzinfo=None)
    values = (
        [v.run_id for v in batch],
        [v.trace_id for v in batch],
        [v.task for v in batch],
        [v.spec for v in batch],
        [v.spec_fingerprint for v in batch],
        [v.profile for v in batch],
        [v.label for v in batch],
        [v.passed for v in batch],
        [v.value for v in batch],
        [v.reason for v in batch],
        [v.run_version for v in batch],
        [v.schema_version for v in batch],
        documents,
        [now] * len(batch),
    )
    import pyarrow as pa  # here, not at the top: a server imports this module before any verdict

    table = pa.Table.from_arrays([pa.array(column) for column in values], names=list(_COLUMNS))
    # The list columns are parts of the verdict document: DuckDB cuts them out of it rather than Python
    # encoding every verdict twice.
    parts = ", ".join(f"verdict::JSON -> '$.{name}'" for name in _PART_COLUMNS)
    parts += ", verdict::JSON ->> '$.conversation_id'"
    register_arrow(connection, "_batch_verdicts", table)
    # DELETE then INSERT, not INSERT OR REPLACE: DuckDB runs an upsert as a MERGE, which takes the global
    # checkpoint lock, so a checkpoint is refused while one is open, and one that starts waits out a
    # whole checkpoint (issue 17; DuckDB >= 1.5 lets a key be deleted and inserted in one transaction).
    owned = not in_transaction
    if owned:
        connection.begin()
    try:
        for partition in VERDICT_PARTITIONS if replace else ():
            connection.execute(
                f"DELETE FROM {partition} WHERE (run_id, spec, run_version) IN "
                "(SELECT (run_id, spec, run_version) FROM _batch_verdicts)"
            )
        connection.execute(
            f"INSERT INTO {into} ({', '.join(_COLUMNS)}, {', '.join(_PART_COLUMNS)}, conversation_id) "
            f"SELECT {', '.join(_COLUMNS)}, {parts} FROM _batch_verdicts"
        )
        if owned:
            connection.commit()
    except BaseException:
        if owned:
            connection.rollback()
        raise
    finally:
        connection.unregister("_batch_verdicts")
    return len(batch)

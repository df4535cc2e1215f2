"""The stored tables: the contract between the collector, scoring and SQL users (docs/storage.md).

Every table name and column here is documented column by column in docs/storage.md; a test keeps the two
in step.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from scoring.evidence.run_keys import keys_of
from scoring.verdict.ddl import rebuild_table

SCHEMA_VERSION = 7

# The JSON text columns (attributes, arguments, results) are most of what is stored: ZSTD keeps spans
# 2.3x smaller than DuckDB's default string compression and checkpoints them 2.6x faster (1.11 ->
# 0.43 s for 240 k bench spans), and a checkpoint stops the writer. Files whose storage version
# predates per-column compression get the default (scoring/verdict/ddl.py).

# Rows of each batch carry `ingest_seq`, a number that only grows: DuckDB's per-row-group min/max
# (zonemaps) then prune scans to recent data, which random trace ids never could.
TABLES: dict[str, str] = {
    "schema_version": """
        CREATE TABLE IF NOT EXISTS schema_version (
            version INTEGER NOT NULL,
            applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        )""",
    "tracescore_state": """
        CREATE TABLE IF NOT EXISTS tracescore_state (
            key VARCHAR PRIMARY KEY,
            value BIGINT NOT NULL
        )""",
    "spans": """
        CREATE TABLE IF NOT EXISTS spans (
            trace_id VARCHAR NOT NULL,
            span_id VARCHAR NOT NULL,
            parent_span_id VARCHAR,
            name VARCHAR NOT NULL,
            kind UTINYINT NOT NULL,
            start_time TIMESTAMP_NS,
            end_time TIMESTAMP_NS,
            duration_ms DOUBLE,
            status_code UTINYINT NOT NULL,
            status_message VARCHAR,
            service_name VARCHAR,
            scope_name VARCHAR,
            scope_version VARCHAR,
            attributes JSON USING COMPRESSION zstd,
            resource_attributes JSON USING COMPRESSION zstd,
            events JSON,
            links JSON,
            trace_state VARCHAR,
            flags UINTEGER,
            dropped_attributes_count UINTEGER,
            dropped_events_count UINTEGER,
            dropped_links_count UINTEGER,
            ingest_seq BIGINT NOT NULL,
            received_at TIMESTAMP NOT NULL
        )""",
    "executions": """
        CREATE TABLE IF NOT EXISTS executions (
            run_id VARCHAR NOT NULL,
            task_id VARCHAR,
            trace_id VARCHAR NOT NULL,
            span_id VARCHAR NOT NULL,
            parent_span_id VARCHAR,
            tool_name VARCHAR NOT NULL,
            call_id VARCHAR,
            call_id_source VARCHAR,
            arguments JSON USING COMPRESSION zstd,
            arguments_raw VARCHAR USING COMPRESSION zstd,
            arguments_error VARCHAR,
            arguments_source VARCHAR,
            result JSON USING COMPRESSION zstd,
            error BOOLEAN NOT NULL,
            error_type VARCHAR,
            error_message VARCHAR,
            paused BOOLEAN NOT NULL,
            pause_reason VARCHAR,
            from_history BOOLEAN NOT NULL,
            start_time TIMESTAMP_NS,
            end_time TIMESTAMP_NS,
            duration_ms DOUBLE,
            agent_path VARCHAR,
            agent_name VARCHAR,
            session_id VARCHAR,
            service_name VARCHAR,
            convention VARCHAR NOT NULL,
            scope_name VARCHAR,
            ingest_seq BIGINT NOT NULL,
            kind VARCHAR NOT NULL DEFAULT 'tool',
            call_index INTEGER NOT NULL DEFAULT 0
        )""",
    "tool_requests": """
        CREATE TABLE IF NOT EXISTS tool_requests (
            run_id VARCHAR NOT NULL,
            task_id VARCHAR,
            trace_id VARCHAR NOT NULL,
            span_id VARCHAR NOT NULL,
            position INTEGER NOT NULL,
            tool_name VARCHAR NOT NULL,
            call_id VARCHAR,
            arguments JSON USING COMPRESSION zstd,
            arguments_raw VARCHAR USING COMPRESSION zstd,
            arguments_error VARCHAR,
            round INTEGER NOT NULL,
            requested_at TIMESTAMP_NS,
            agent_path VARCHAR,
            encoding VARCHAR NOT NULL,
            execution_span_id VARCHAR,
            ingest_seq BIGINT NOT NULL,
            execution_call_index INTEGER
        )""",
    "run_traces": """
        CREATE TABLE IF NOT EXISTS run_traces (
            run_id VARCHAR NOT NULL,
            trace_id VARCHAR NOT NULL,
            root_span_id VARCHAR NOT NULL,
            task_id VARCHAR,
            service_name VARCHAR,
            agent_name VARCHAR,
            session_id VARCHAR,
            start_time TIMESTAMP_NS,
            end_time TIMESTAMP_NS,
            n_spans INTEGER NOT NULL,
            n_executions INTEGER NOT NULL,
            n_requests INTEGER NOT NULL,
            attributes JSON,
            status VARCHAR NOT NULL,
            version INTEGER NOT NULL,
            completed_at TIMESTAMP NOT NULL,
            min_seq BIGINT NOT NULL,
            max_seq BIGINT NOT NULL
        )""",
    # Where each row of run_traces is, for look-ups by id without an index (KEYLESS, below): a scan of
    # these 8-byte keys reads ~1.5 ms a million runs where run_traces' 32-character ids read ~20, and
    # the `max_seq` it gives lets DuckDB skip every row group of run_traces but the run's
    # (scoring/evidence/run_keys.py). One row per run_traces row, written and deleted with it.
    "run_keys": """
        CREATE TABLE IF NOT EXISTS run_keys (
            run_key UBIGINT NOT NULL,
            trace_key UBIGINT NOT NULL,
            max_seq BIGINT NOT NULL
        )""",
    # Issue 21: only runs that are turns of a conversation have a row, so other runs cost nothing.
    # Kept out of run_traces, whose column list SQL users insert against.
    "run_turns": """
        CREATE TABLE IF NOT EXISTS run_turns (
            run_id VARCHAR NOT NULL,
            trace_id VARCHAR NOT NULL,
            conversation_id VARCHAR NOT NULL,
            turn_index INTEGER,
            last_turn BOOLEAN NOT NULL
        )""",
}

# Until DuckDB 2.1, a checkpoint writing a table holds every commit that appends to it (duckdb/duckdb
# #25988): each table the writer appends to is two partitions, `<table>_p0` and `<table>_p1`, and the
# writer appends to one while a checkpoint writes the other (collector/store/partitions.py). A view of
# the table's own name, stored in the file, is their union: SQL users, scoring, export and the DuckDB
# CLI read `spans` as before. Keys hold across partitions because the one writer deletes a key from
# both before inserting it into one. `tracescore_state` stays one table: it holds a few rows.
PARTITIONED: tuple[str, ...] = ("spans", "executions", "tool_requests", "run_traces", "run_keys", "run_turns")
PARTITION_COUNT = 2


def partitions(table: str) -> tuple[str, ...]:
    return tuple(f"{table}_p{i}" for i in range(PARTITION_COUNT))


# BY NAME: a file migrated from before the partitions keeps its columns' order in partition 0 (columns
# added by migrations at the end), while partition 1 has the order above.
PARTITION_VIEWS: dict[str, str] = {
    table: f"CREATE OR REPLACE VIEW {table} AS "
    + " UNION ALL BY NAME ".join(f"SELECT * FROM {p}" for p in partitions(table))
    for table in PARTITIONED
}

# Runs sharing a conversation id are its turns, in turn order: by `tracescore.turn.index` where the
# harness set it, then by start (docs/storage.md, "Conversations"). Scoring asks for a few conversations
# by id through the indexes instead (scoring/evidence/conversations.py): DuckDB may plan this view's
# grouping over every run.
CONVERSATIONS_SQL = """
        WITH turns AS (
            SELECT conversation_id, run_id, max(turn_index) AS turn_index, bool_or(last_turn) AS last_turn
            FROM run_turns
            GROUP BY conversation_id, run_id
        ), turn_runs AS (
            SELECT t.conversation_id, t.run_id, t.turn_index, t.last_turn,
                any_value(r.task_id) AS task_id, min(r.start_time) AS start_time,
                max(r.end_time) AS end_time, bool_or(r.status = 'open') AS open,
                sum(r.version) AS version, max(r.completed_at) AS completed_at
            FROM turns t JOIN run_traces r ON r.run_id = t.run_id
            GROUP BY ALL
        )
        SELECT
            conversation_id,
            count(*) AS n_turns,
            list(run_id ORDER BY turn_index NULLS LAST, start_time, run_id) AS run_ids,
            arg_min(task_id, start_time) AS task_id,
            min(start_time) AS start_time,
            max(end_time) AS end_time,
            bool_or(last_turn) AS last_turn_marked,
            CASE WHEN bool_or(open) THEN 'open' ELSE 'complete' END AS status,
            sum(version)::BIGINT AS version,
            max(completed_at) AS completed_at
        FROM turn_runs
        GROUP BY conversation_id"""

# A run may span several traces (an explicit tracescore.run.id reused, e.g. a resumed session), so the
# stored unit is (run, trace) and `runs` folds them.
VIEWS: dict[str, str] = {
    "runs": """
        CREATE OR REPLACE VIEW runs AS
        SELECT
            run_id,
            min(trace_id) AS trace_id,
            count(*) AS n_traces,
            any_value(task_id) AS task_id,
            any_value(service_name) AS service_name,
            any_value(agent_name) AS agent_name,
            any_value(session_id) AS session_id,
            any_value(root_span_id) AS root_span_id,
            min(start_time) AS start_time,
            max(end_time) AS end_time,
            date_diff('microsecond', min(start_time), max(end_time)) / 1000.0 AS duration_ms,
            sum(n_spans)::BIGINT AS n_spans,
            sum(n_executions)::BIGINT AS n_executions,
            sum(n_requests)::BIGINT AS n_requests,
            CASE WHEN bool_or(status = 'open') THEN 'open' ELSE 'complete' END AS status,
            sum(version)::BIGINT AS version,
            max(completed_at) AS completed_at,
            any_value(attributes) AS attributes,
            min(min_seq) AS min_seq,
            max(max_seq) AS max_seq,
            any_value(t.conversation_id) AS conversation_id,
            max(t.turn_index) AS turn_index,
            coalesce(bool_or(t.last_turn), false) AS last_turn
        FROM run_traces LEFT JOIN run_turns t USING (run_id, trace_id)
        GROUP BY run_id""",
    # Runs sharing a conversation id are its turns, in turn order: by `tracescore.turn.index` where the
    # harness set it, then by start (docs/storage.md, "Conversations").
    "conversations": f"""
        CREATE OR REPLACE VIEW conversations AS {CONVERSATIONS_SQL}""",
}


# No table that grows with the history has a DuckDB index or primary key (schema 7). DuckDB keeps an ART
# index in its memory, ~70-120 bytes a key here, and a checkpoint must hold the whole of it: past a
# budget's share (~250 k runs under 122 MiB with the keys of schema 6) the checkpoint fails and DuckDB
# invalidates the file, again after every restart (bench/README.md, "Fourteenth session"). The one
# writer keeps the keys unique itself, as it always has for `spans`; runs and traces are found by id
# through `run_keys` (scoring/evidence/run_keys.py), rows of a known trace through its seq range, and
# the writer's own per-batch questions are answered by its filters first (collector/store/_stored_ids.py).
KEYLESS: tuple[str, ...] = ("executions", "tool_requests", "run_traces", "run_turns")


# The indexes files of schema 5 and 6 had, named per partition; schema 6 dropped the unpartitioned ones.
_OLD_INDEXES: tuple[tuple[str, str], ...] = (
    ("run_traces", "by_run"),
    ("run_traces", "by_trace"),
    ("run_turns", "by_conversation"),
)


def _into_partitions(connection: duckdb.DuckDBPyConnection, zstd: bool) -> None:
    """Schema 5: each written table of an older file becomes its first partition, renamed in place (no
    copy); the empty partition made with the tables just before is dropped first. A table the file never
    had (run_turns, before version 4) is left to its empty partitions. DuckDB renames no table that has
    an index, so the old indexes go."""
    for table, suffix in _OLD_INDEXES:
        connection.execute(f"DROP INDEX IF EXISTS {table}_{suffix}")
    rows = connection.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()
    existing = {row[0] for row in rows}
    for table in PARTITIONED:
        if table in existing:
            first = partitions(table)[0]
            connection.execute(f"DROP TABLE {first}")
            connection.execute(f"ALTER TABLE {table} RENAME TO {first}")


def _without_keys(connection: duckdb.DuckDBPyConnection, zstd: bool) -> None:
    """Schema 7: each partition of a KEYLESS table that has a primary key is rebuilt with today's
    definition, which has none (DuckDB drops no constraint in place), its rows copied by name; the
    indexes go first (DuckDB drops no table that has one). `run_keys` is filled from `run_traces`,
    partition by partition. In the migration's one transaction."""
    for table, suffix in _OLD_INDEXES:
        for partition in partitions(table):
            connection.execute(f"DROP INDEX IF EXISTS {partition}_{suffix}")
    keyed = {
        row[0]
        for row in connection.execute(
            "SELECT table_name FROM duckdb_constraints() "
            "WHERE schema_name = 'main' AND constraint_type = 'PRIMARY KEY'"
        ).fetchall()
    }
    for table in KEYLESS:
        for partition in partitions(table):
            if partition in keyed:
                rebuild_table(connection, partition, _table_ddl(table), zstd=zstd)
    for keys, runs in zip(partitions("run_keys"), partitions("run_traces"), strict=True):
        connection.execute(f"INSERT INTO {keys} (run_key, trace_key, max_seq) {keys_of(runs)}")


# What opening a file of an older schema version adds to it, by the version that added it. Columns are
# appended (DuckDB adds a column at the end): every insert names its columns, so their order is free.
# From version 5 the written tables are partitions: a column is added to each (`partitions(table)`),
# and the views, made again after every migration, show it.
# A callable step is given whether the file takes ZSTD columns (asked before the migration's transaction).
Migration = str | Callable[[duckdb.DuckDBPyConnection, bool], None]
MIGRATIONS: dict[int, tuple[Migration, ...]] = {
    2: ("ALTER TABLE executions ADD COLUMN IF NOT EXISTS arguments_source VARCHAR",),
    3: ("ALTER TABLE executions ADD COLUMN IF NOT EXISTS kind VARCHAR DEFAULT 'tool'",),
    # Conversations and turns (issue 21): the run_turns table (made with the tables, as any missing
    # table is) and the views that read it; runs completed before it are turns of no conversation.
    4: (),
    # Several executions per span (issue #16: Haystack 2's ToolInvoker runs a turn's calls in one span):
    # `call_index` joins the executions key, which DuckDB cannot alter, so the table is rebuilt with
    # today's definition (a later migration's `ADD COLUMN IF NOT EXISTS` then finds its column there).
    # The copy is made (ZSTD or not, as the file allows) before one transaction swaps it in: run again
    # after a crash, every step is redone from where the file is. Each request now also says which of
    # its execution span's calls it joined.
    5: (
        TABLES["executions"].replace("EXISTS executions (", "EXISTS executions_v5 ("),
        "INSERT INTO executions_v5 BY NAME SELECT * FROM executions",
        "DROP TABLE executions",
        "ALTER TABLE executions_v5 RENAME TO executions",
        "ALTER TABLE tool_requests ADD COLUMN IF NOT EXISTS execution_call_index INTEGER",
        "UPDATE tool_requests SET execution_call_index = 0 WHERE execution_span_id IS NOT NULL",
    ),
    # Two partitions per table the writer appends to (issue 17): the old table's rows are partition 0.
    6: (_into_partitions,),
    # No index or primary key on the tables that grow with the history (KEYLESS, above).
    7: (_without_keys,),
}


def create_schema_sql() -> list[str]:
    return [*create_tables_sql(), *create_views_sql()]


def _table_ddl(table: str) -> Callable[[str], str]:
    """Today's definition of `table`, for a table of another name (a partition, or its rebuilt copy)."""
    return lambda name: TABLES[table].replace(f"EXISTS {table} (", f"EXISTS {name} (", 1)


def create_tables_sql() -> list[str]:
    """The tables alone: an older file is migrated before the views that read its new columns."""
    return [
        _table_ddl(name)(partition)
        for name in TABLES
        for partition in (partitions(name) if name in PARTITIONED else (name,))
    ]


def create_views_sql() -> list[str]:
    return [*PARTITION_VIEWS.values(), *VIEWS.values()]

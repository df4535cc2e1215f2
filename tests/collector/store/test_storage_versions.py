"""JSON columns are ZSTD-compressed where the file's storage version allows it; a file written in an
older storage format (a user's, or another tool's) still opens, with the default compression."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from collector.store.database import open_writer
from collector.store.schema import PARTITIONED, SCHEMA_VERSION, VIEWS, partitions
from collector.store.schema import TABLES as TABLES_DDL
from scoring import ensure_verdict_schema

TABLES = {"spans", "executions", "tool_requests", "run_traces", "verdicts"}


@pytest.mark.parametrize("storage_version", [None, "v1.0.0"])
def test_the_schema_is_created_in_any_storage_version(tmp_path: Path, storage_version: str | None) -> None:
    path = tmp_path / "store.duckdb"
    if storage_version is not None:
        with duckdb.connect() as connection:
            connection.execute(f"ATTACH '{path}' AS old (STORAGE_VERSION '{storage_version}')")
    for _ in range(2):  # created, then opened again as it is
        connection = open_writer(path)
        try:
            ensure_verdict_schema(connection)
            connection.execute(
                "INSERT INTO tracescore_state VALUES ('probe', 1) ON CONFLICT DO UPDATE SET value = 1"
            )
            tables = {
                row[0]
                for row in connection.execute("SELECT table_name FROM information_schema.tables").fetchall()
            }
            assert tables >= TABLES
        finally:
            connection.close()


# The primary keys files had before schema version 7 (collector/store/schema.py, KEYLESS).
_OLD_KEYS = {
    "executions": "trace_id, span_id, call_index",
    "tool_requests": "trace_id, span_id, position",
    "run_traces": "run_id, trace_id",
    "run_turns": "run_id, trace_id",
}


def _keyed(ddl: str, key: str) -> str:
    """A table's DDL with the primary key of before schema version 7."""
    return ddl.rstrip().removesuffix(")") + f", PRIMARY KEY ({key}))"


def _with_old_keys(connection: duckdb.DuckDBPyConnection, tables: dict[str, str]) -> None:
    """Make these empty tables again (name: the table in TABLES_DDL it is made as) with their old keys."""
    for name, table in tables.items():
        assert connection.execute(f"SELECT count(*) FROM {name}").fetchall() == [(0,)]
        connection.execute(f"DROP TABLE {name}")
        ddl = TABLES_DDL[table].replace(f"EXISTS {table} (", f"EXISTS {name} (", 1)
        connection.execute(_keyed(ddl, _OLD_KEYS[table]))


def _unpartition(connection: duckdb.DuckDBPyConnection) -> None:
    """Turn a file of this version back into the shape of version 4: each written table one table of its
    own name (partition 0 renamed back; partition 1 is empty here), with the keys and indexes of then."""
    connection.execute("DROP VIEW conversations")
    connection.execute("DROP VIEW runs")
    for index in connection.execute("SELECT index_name FROM duckdb_indexes()").fetchall():
        connection.execute(f"DROP INDEX {index[0]}")
    for table in PARTITIONED:
        first, second = partitions(table)
        assert connection.execute(f"SELECT count(*) FROM {second}").fetchall() == [(0,)]
        connection.execute(f"DROP VIEW {table}")
        connection.execute(f"DROP TABLE {second}")
        connection.execute(f"ALTER TABLE {first} RENAME TO {table}")
    _with_old_keys(connection, {table: table for table in _OLD_KEYS})
    connection.execute("CREATE INDEX run_traces_by_run ON run_traces (run_id)")
    connection.execute("CREATE INDEX run_traces_by_trace ON run_traces (trace_id)")
    connection.execute("CREATE INDEX run_turns_by_conversation ON run_turns (conversation_id)")
    for view in VIEWS.values():
        connection.execute(view)
    connection.execute("DELETE FROM schema_version")
    connection.execute("INSERT INTO schema_version (version) VALUES (4)")


def _version_4_executions(connection: duckdb.DuckDBPyConnection) -> None:
    """The executions and tool_requests tables as schema version 4 made them (empty)."""
    connection.execute("DROP TABLE executions")
    before_call_index = TABLES_DDL["executions"].replace(
        ",\n            call_index INTEGER NOT NULL DEFAULT 0", ""
    )
    connection.execute(_keyed(before_call_index, "trace_id, span_id"))
    connection.execute("ALTER TABLE tool_requests DROP COLUMN execution_call_index")


# What each schema version added to executions, and what an upgraded file holds there for old rows.
_ADDED = {2: ("arguments_source", None), 3: ("kind", "tool")}


@pytest.mark.parametrize("old_version", [1, 2])
def test_an_older_file_gains_the_columns_added_since(tmp_path: Path, old_version: int) -> None:
    """A file written before a schema version is upgraded in place when opened: its rows kept, each new
    column holding what it means for rows written before it (NULL `arguments_source`: unknown; `kind`
    'tool': no older version recognised handoffs)."""
    path = tmp_path / f"v{old_version}.duckdb"
    connection = open_writer(path)
    _unpartition(connection)
    _version_4_executions(connection)
    connection.execute(
        "INSERT INTO executions (run_id, trace_id, span_id, tool_name, error, paused, from_history, "
        "convention, ingest_seq) VALUES ('r', 't', 's', 'get_weather', false, false, false, 'gen_ai', 1)"
    )
    added = [column for version, (column, _) in _ADDED.items() if version > old_version]
    for column in added:
        connection.execute(f"ALTER TABLE executions DROP COLUMN {column}")
    connection.execute("DELETE FROM schema_version")
    connection.execute("INSERT INTO schema_version (version) VALUES (?)", [old_version])
    connection.close()

    connection = open_writer(path)
    try:
        versions = [row[0] for row in connection.execute("SELECT version FROM schema_version").fetchall()]
        columns = ", ".join(column for column, _ in _ADDED.values())
        rows = connection.execute(f"SELECT tool_name, {columns} FROM executions").fetchall()
    finally:
        connection.close()
    assert max(versions) == SCHEMA_VERSION
    assert rows == [("get_weather", *(value for _, value in _ADDED.values()))]


def test_a_version_3_file_gains_the_conversation_table_and_views(tmp_path: Path) -> None:
    """Schema version 4 added the run_turns table and the conversation columns of the `runs` view
    (issue 21): a file written before it is upgraded in place, its runs kept as turns of no
    conversation, and the `runs` and `conversations` views read the new table."""
    path = tmp_path / "v3.duckdb"
    connection = open_writer(path)
    _unpartition(connection)
    connection.execute(
        "INSERT INTO run_traces (run_id, trace_id, root_span_id, n_spans, n_executions, n_requests, status, "
        "version, completed_at, min_seq, max_seq) VALUES ('r', 't', 's', 1, 0, 0, 'complete', 1, now(), 1, 1)"
    )
    connection.execute("DROP VIEW conversations")
    connection.execute("DROP VIEW runs")
    connection.execute("DROP TABLE run_turns")
    connection.execute("DELETE FROM schema_version")
    connection.execute("INSERT INTO schema_version (version) VALUES (3)")
    connection.close()

    connection = open_writer(path)
    try:
        versions = [row[0] for row in connection.execute("SELECT version FROM schema_version").fetchall()]
        runs = connection.execute(
            "SELECT run_id, conversation_id, turn_index, last_turn FROM runs"
        ).fetchall()
        conversations = connection.execute("SELECT count(*) FROM conversations").fetchone()
    finally:
        connection.close()
    assert max(versions) == SCHEMA_VERSION
    assert runs == [("r", None, None, False)]
    assert conversations == (0,)


def test_a_file_from_before_conversations_read_without_upgrade_has_none(tmp_path: Path) -> None:
    """`tracescore score` reads a file read-only, without upgrading it: a spec with turns finds no
    conversation there (none was recorded before schema version 4) instead of failing."""
    from scoring import Spec, score_runs

    path = tmp_path / "v2.duckdb"
    connection = open_writer(path)
    _unpartition(connection)
    connection.execute("DROP VIEW conversations")
    connection.execute("DROP TABLE run_turns")
    connection.close()
    spec = Spec.model_validate({"name": "c", "turns": [{"expect_no_tool_calls": True}]})
    with duckdb.connect(str(path), read_only=True) as reader:
        assert list(score_runs(reader, [spec])) == []


def test_a_version_4_file_keys_executions_by_span_and_call_index(tmp_path: Path) -> None:
    """Schema version 5 keyed executions by (trace, span, call_index), so that one span may record
    several calls (Haystack 2's ToolInvoker): a version 4 file, whose executions were keyed by (trace,
    span), is rebuilt in place (then moved into partitions by version 6, and its key left to the writer
    by version 7), its rows kept as each span's call 0, its joined requests pointing at call 0; a second
    call of the same span can then be stored."""
    path = tmp_path / "v4.duckdb"
    connection = open_writer(path)
    _unpartition(connection)
    _version_4_executions(connection)
    connection.execute(
        "INSERT INTO executions (run_id, trace_id, span_id, tool_name, error, paused, from_history, "
        "convention, ingest_seq, arguments) "
        "VALUES ('r', 't', 's', 'get_weather', false, false, false, 'gen_ai', 1, '{\"city\": \"Paris\"}')"
    )
    connection.execute(
        "INSERT INTO tool_requests (run_id, trace_id, span_id, position, tool_name, round, encoding, "
        "execution_span_id, ingest_seq) VALUES ('r', 't', 'chat', 0, 'get_weather', 1, 'gen_ai', 's', 1), "
        "('r', 't', 'chat', 1, 'book_flight', 1, 'gen_ai', NULL, 1)"
    )
    connection.execute("DELETE FROM schema_version")
    connection.execute("INSERT INTO schema_version (version) VALUES (4)")
    connection.close()

    connection = open_writer(path)
    try:
        stored = connection.execute(
            "SELECT span_id, call_index, tool_name, arguments::VARCHAR FROM executions"
        ).fetchall()
        joined = connection.execute(
            "SELECT position, execution_span_id, execution_call_index FROM tool_requests ORDER BY position"
        ).fetchall()
        connection.execute(
            "INSERT INTO executions_p0 (run_id, trace_id, span_id, call_index, tool_name, error, paused, "
            "from_history, convention, ingest_seq) "
            "VALUES ('r', 't', 's', 1, 'get_weather', false, false, false, 'haystack', 2)"
        )
        calls = connection.execute("SELECT call_index FROM executions ORDER BY call_index").fetchall()
        tables = {row[0] for row in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    finally:
        connection.close()
    assert stored == [("s", 0, "get_weather", '{"city": "Paris"}')]
    assert calls == [(0,), (1,)]
    assert joined == [(0, "s", 0), (1, None, None)]
    assert "executions_v5" not in tables


def test_a_version_4_file_is_moved_into_partitions_in_place(tmp_path: Path) -> None:
    """Schema version 6 (issue 17) made each written table two partitions behind a view of its name: a
    file written before keeps its rows, now in partition 0, read through the views (and through `runs`,
    which reads the `run_traces` view), with no index (schema version 7); opening it again changes
    nothing."""
    path = tmp_path / "v4.duckdb"
    connection = open_writer(path)
    _unpartition(connection)
    connection.execute(
        "INSERT INTO run_traces (run_id, trace_id, root_span_id, n_spans, n_executions, n_requests, status, "
        "version, completed_at, min_seq, max_seq) VALUES ('r', 't', 's', 1, 0, 0, 'complete', 1, now(), 1, 1)"
    )
    connection.execute(
        "INSERT INTO spans (trace_id, span_id, name, kind, status_code, ingest_seq, received_at) "
        "VALUES ('t', 's', 'root', 1, 0, 1, now())"
    )
    connection.close()

    for _ in range(2):
        connection = open_writer(path)
        try:
            kinds = dict(
                connection.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall()
            )
            first = {
                t: connection.execute(f"SELECT count(*) FROM {t}_p0").fetchall()[0][0] for t in PARTITIONED
            }
            runs = connection.execute("SELECT run_id, n_traces, status FROM runs").fetchall()
            spans = connection.execute("SELECT trace_id, span_id FROM spans").fetchall()
            indexes = {
                r[0]: r[1]
                for r in connection.execute("SELECT index_name, table_name FROM duckdb_indexes()").fetchall()
            }
            versions = [r[0] for r in connection.execute("SELECT version FROM schema_version").fetchall()]
        finally:
            connection.close()
        assert {t: kinds[t] for t in PARTITIONED} == dict.fromkeys(PARTITIONED, "VIEW")
        assert all(kinds[p] == "BASE TABLE" for t in PARTITIONED for p in partitions(t))
        assert first == {**dict.fromkeys(PARTITIONED, 0), "run_traces": 1, "run_keys": 1, "spans": 1}
        assert runs == [("r", 1, "complete")]
        assert spans == [("t", "s")]
        assert indexes == {}
        assert versions == [4, SCHEMA_VERSION]


def test_a_verdicts_table_from_before_the_partitions_becomes_partition_0(tmp_path: Path) -> None:
    """The verdicts table (scoring's) moves into partitions as the collector's tables do, when the verdict
    schema is next ensured: its rows kept, the key still replaced across both partitions, and the
    partitions named as the writer names them (collector/store/schema.py)."""
    from scoring import store_verdicts
    from scoring.verdict.record import error_verdict
    from scoring.verdict.table import DDL, VERDICT_PARTITIONS

    assert partitions("verdicts") == VERDICT_PARTITIONS
    old = error_verdict("r", "t", None, "s", "f", "default", 1, "old")
    with duckdb.connect(str(tmp_path / "v.duckdb")) as connection:
        connection.execute(DDL[0].replace("EXISTS verdicts_p0 (", "EXISTS verdicts (", 1))
        store_verdicts_old = (
            "INSERT INTO verdicts (run_id, trace_id, spec, spec_fingerprint, profile, label, run_version, "
            "schema_version, verdict) VALUES ('r', 't', 's', 'f', 'default', 'error', 1, 1, '{}')"
        )
        connection.execute(store_verdicts_old)
        for _ in range(2):
            ensure_verdict_schema(connection)
        kinds = dict(
            connection.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall()
        )
        assert kinds["verdicts"] == "VIEW"
        assert kinds["verdicts_p0"] == kinds["verdicts_p1"] == "BASE TABLE"
        assert connection.execute("SELECT count(*) FROM verdicts_p0").fetchall() == [(1,)]
        store_verdicts(connection, [old], into="verdicts_p1")  # the same key, now in the other partition
        rows = connection.execute("SELECT run_id, reason, conversation_id FROM verdicts").fetchall()
        assert rows == [("r", old.reason, None)]
        assert connection.execute("SELECT count(*) FROM verdicts_p1").fetchall() == [(1,)]


def test_a_version_6_file_loses_its_keys_and_indexes_and_keeps_its_rows(tmp_path: Path) -> None:
    """Schema version 7: DuckDB holds an index in its memory whole, and a checkpoint that cannot fails
    and invalidates the file (collector/store/schema.py, KEYLESS). A version 6 file, its partitions
    keyed and indexed and its verdict partitions keyed, is rebuilt without them, every row kept in the
    partition it was in; opening it again changes nothing."""
    from scoring.verdict.table import DDL, VERDICT_PARTITIONS

    path = tmp_path / "v6.duckdb"
    connection = open_writer(path)
    ensure_verdict_schema(connection)
    _with_old_keys(connection, {p: table for table in _OLD_KEYS for p in partitions(table)})
    for p in VERDICT_PARTITIONS:
        connection.execute(f"DROP TABLE {p}")
        connection.execute(
            _keyed(DDL[0].replace("EXISTS verdicts_p0 (", f"EXISTS {p} (", 1), "run_id, spec, run_version")
        )
        connection.execute(f"ALTER TABLE {p} ADD COLUMN conversation_id VARCHAR")
    for p in partitions("run_traces"):
        connection.execute(f"CREATE INDEX {p}_by_run ON {p} (run_id)")
        connection.execute(f"CREATE INDEX {p}_by_trace ON {p} (trace_id)")
    for p in partitions("run_turns"):
        connection.execute(f"CREATE INDEX {p}_by_conversation ON {p} (conversation_id)")
    for i, p in enumerate(partitions("run_traces")):
        connection.execute(
            f"INSERT INTO {p} (run_id, trace_id, root_span_id, n_spans, n_executions, n_requests, "
            "status, version, completed_at, min_seq, max_seq) "
            "VALUES (?, ?, 's', 1, 1, 1, 'complete', 1, now(), 1, 1)",
            [f"r{i}", f"t{i}"],
        )
        connection.execute(
            f"INSERT INTO {partitions('executions')[i]} (run_id, trace_id, span_id, tool_name, error, "
            "paused, from_history, convention, ingest_seq, arguments) "
            "VALUES (?, ?, 's', 'get_weather', false, false, false, 'gen_ai', 1, '{\"city\": \"Oslo\"}')",
            [f"r{i}", f"t{i}"],
        )
        connection.execute(
            f"INSERT INTO {partitions('run_turns')[i]} (run_id, trace_id, conversation_id, turn_index, "
            "last_turn) VALUES (?, ?, 'c', ?, false)",
            [f"r{i}", f"t{i}", i],
        )
        connection.execute(
            f"INSERT INTO {partitions('tool_requests')[i]} (run_id, trace_id, span_id, position, tool_name, "
            "round, encoding, execution_span_id, execution_call_index, ingest_seq) "
            "VALUES (?, ?, 'chat', 0, 'get_weather', 1, 'gen_ai', 's', 0, 1)",
            [f"r{i}", f"t{i}"],
        )
        connection.execute(
            f"INSERT INTO {VERDICT_PARTITIONS[i]} (run_id, trace_id, spec, spec_fingerprint, profile, label, "
            "run_version, schema_version, verdict, conversation_id) "
            "VALUES (?, ?, 's', 'f', 'default', 'pass', 1, 1, '{}', ?)",
            [f"r{i}", f"t{i}", "c" if i else None],
        )
    connection.execute("DELETE FROM schema_version")
    connection.execute("INSERT INTO schema_version (version) VALUES (6)")
    keyed = "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY' ORDER BY 1"
    assert len(connection.execute(keyed).fetchall()) == 11  # the old file's shape, state included
    connection.close()

    for _ in range(2):
        connection = open_writer(path)
        try:
            ensure_verdict_schema(connection)
            keys = [row[0] for row in connection.execute(keyed).fetchall()]
            indexes = connection.execute("SELECT index_name FROM duckdb_indexes()").fetchall()
            placed = {
                p: connection.execute(f"SELECT run_id FROM {p}").fetchall()
                for table in (*_OLD_KEYS, "verdicts")
                for p in partitions(table)
            }
            turns = connection.execute(
                "SELECT conversation_id, n_turns, run_ids FROM conversations"
            ).fetchall()
            verdicts = connection.execute(
                "SELECT run_id, conversation_id FROM verdicts ORDER BY run_id"
            ).fetchall()
            arguments = connection.execute("SELECT arguments->>'city' FROM executions").fetchall()
            versions = [r[0] for r in connection.execute("SELECT version FROM schema_version").fetchall()]
            located = [
                connection.execute(
                    f"SELECT count(*) FROM {k} k JOIN {r} r ON run_key = md5_number_lower(run_id) "
                    "AND trace_key = md5_number_lower(trace_id) AND k.max_seq = r.max_seq"
                ).fetchall()
                for k, r in zip(partitions("run_keys"), partitions("run_traces"), strict=True)
            ]
        finally:
            connection.close()
        assert located == [[(1,)], [(1,)]]  # run_keys filled from run_traces, partition by partition
        assert keys == ["tracescore_state"]
        assert indexes == []
        assert placed == {
            p: [(f"r{i}",)] for table in (*_OLD_KEYS, "verdicts") for i, p in enumerate(partitions(table))
        }
        assert turns == [("c", 2, ["r0", "r1"])]
        assert verdicts == [("r0", None), ("r1", "c")]
        assert arguments == [("Oslo",), ("Oslo",)]
        assert versions == [6, SCHEMA_VERSION]

"""JSON columns are ZSTD-compressed where the file's storage version allows it; a file written in an
older storage format (a user's, or another tool's) still opens, with the default compression."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from collector.store.database import open_writer
from collector.store.schema import SCHEMA_VERSION
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
                row[0] for row in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()
            }
            assert tables >= TABLES
        finally:
            connection.close()


def _version_4_executions(connection: duckdb.DuckDBPyConnection) -> None:
    """The executions and tool_requests tables as schema version 4 made them (empty)."""
    connection.execute("DROP TABLE executions")
    connection.execute(
        TABLES_DDL["executions"]
        .replace("call_index INTEGER NOT NULL DEFAULT 0,", "")
        .replace("PRIMARY KEY (trace_id, span_id, call_index)", "PRIMARY KEY (trace_id, span_id)")
    )
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
    assert max(versions) == SCHEMA_VERSION >= 4
    assert runs == [("r", None, None, False)]
    assert conversations == (0,)


def test_a_file_from_before_conversations_read_without_upgrade_has_none(tmp_path: Path) -> None:
    """`tracescore score` reads a file read-only, without upgrading it: a spec with turns finds no
    conversation there (none was recorded before schema version 4) instead of failing."""
    from scoring import Spec, score_runs

    path = tmp_path / "v2.duckdb"
    connection = open_writer(path)
    connection.execute("DROP VIEW conversations")
    connection.execute("DROP TABLE run_turns")
    connection.close()
    spec = Spec.model_validate({"name": "c", "turns": [{"expect_no_tool_calls": True}]})
    with duckdb.connect(str(path), read_only=True) as reader:
        assert list(score_runs(reader, [spec])) == []


def test_a_version_4_file_keys_executions_by_span_and_call_index(tmp_path: Path) -> None:
    """Schema version 5 keyed executions by (trace, span, call_index), so that one span may record
    several calls (Haystack 2's ToolInvoker): a version 4 file, whose executions were keyed by (trace,
    span), is rebuilt in place, its rows kept as each span's call 0, its joined requests pointing at
    call 0; a second call of the same span can then be stored."""
    path = tmp_path / "v4.duckdb"
    connection = open_writer(path)
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
            "INSERT INTO executions (run_id, trace_id, span_id, call_index, tool_name, error, paused, "
            "from_history, convention, ingest_seq) "
            "VALUES ('r', 't', 's', 1, 'get_weather', false, false, false, 'haystack', 2)"
        )
        with pytest.raises(duckdb.ConstraintException):
            connection.execute(
                "INSERT INTO executions (run_id, trace_id, span_id, call_index, tool_name, error, paused, "
                "from_history, convention, ingest_seq) "
                "VALUES ('r', 't', 's', 1, 'get_weather', false, false, false, 'haystack', 3)"
            )
        tables = {row[0] for row in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    finally:
        connection.close()
    assert stored == [("s", 0, "get_weather", '{"city": "Paris"}')]
    assert joined == [(0, "s", 0), (1, None, None)]
    assert "executions_v5" not in tables

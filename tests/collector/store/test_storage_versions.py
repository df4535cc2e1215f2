"""JSON columns are ZSTD-compressed where the file's storage version allows it; a file written in an
older storage format (a user's, or another tool's) still opens, with the default compression."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from collector.store.database import open_writer
from collector.store.schema import SCHEMA_VERSION
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


def test_a_version_1_file_gains_the_arguments_source_column(tmp_path: Path) -> None:
    """Schema version 2 added executions.arguments_source: a file written before it is upgraded in place,
    its rows kept, and the new column is NULL for them."""
    path = tmp_path / "v1.duckdb"
    connection = open_writer(path)
    connection.execute(
        "INSERT INTO executions (run_id, trace_id, span_id, tool_name, error, paused, from_history, "
        "convention, ingest_seq) VALUES ('r', 't', 's', 'get_weather', false, false, false, 'gen_ai', 1)"
    )
    connection.execute("ALTER TABLE executions DROP COLUMN arguments_source")
    connection.execute("DELETE FROM schema_version")
    connection.execute("INSERT INTO schema_version (version) VALUES (1)")
    connection.close()

    connection = open_writer(path)
    try:
        versions = [row[0] for row in connection.execute("SELECT version FROM schema_version").fetchall()]
        rows = connection.execute("SELECT tool_name, arguments_source FROM executions").fetchall()
    finally:
        connection.close()
    assert max(versions) == SCHEMA_VERSION
    assert rows == [("get_weather", None)]


def test_a_version_2_file_gains_the_conversation_table_and_views(tmp_path: Path) -> None:
    """Schema version 3 added the run_turns table and the conversation columns of the `runs` view
    (issue 21): a file written before it is upgraded in place, its runs kept as turns of no
    conversation, and the `runs` and `conversations` views read the new table."""
    path = tmp_path / "v2.duckdb"
    connection = open_writer(path)
    connection.execute(
        "INSERT INTO run_traces (run_id, trace_id, root_span_id, n_spans, n_executions, n_requests, status, "
        "version, completed_at, min_seq, max_seq) VALUES ('r', 't', 's', 1, 0, 0, 'complete', 1, now(), 1, 1)"
    )
    connection.execute("DROP VIEW conversations")
    connection.execute("DROP VIEW runs")
    connection.execute("DROP TABLE run_turns")
    connection.execute("DELETE FROM schema_version")
    connection.execute("INSERT INTO schema_version (version) VALUES (2)")
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
    assert max(versions) == SCHEMA_VERSION == 3
    assert runs == [("r", None, None, False)]
    assert conversations == (0,)


def test_a_version_2_file_read_without_upgrade_has_no_conversations(tmp_path: Path) -> None:
    """`tracescore score` reads a file read-only, without upgrading it: a spec with turns finds no
    conversation there (none was recorded before schema version 3) instead of failing."""
    from scoring import Spec, score_runs

    path = tmp_path / "v2.duckdb"
    connection = open_writer(path)
    connection.execute("DROP VIEW conversations")
    connection.execute("DROP TABLE run_turns")
    connection.close()
    spec = Spec.model_validate({"name": "c", "turns": [{"expect_no_tool_calls": True}]})
    with duckdb.connect(str(path), read_only=True) as reader:
        assert list(score_runs(reader, [spec])) == []

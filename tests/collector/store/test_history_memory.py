"""DuckDB keeps an index in its memory whole, and a checkpoint that cannot allocate fails and invalidates
the file, after every restart alike: with the keys of schema version 6, 100,000 runs were the most a
48 MiB DuckDB share could checkpoint (bench/README.md, "Fourteenth session"). The tables that grow with
the history have no index now (collector/store/schema.py, KEYLESS): what DuckDB holds in memory does not
grow with them."""

from __future__ import annotations

from pathlib import Path

import duckdb

from bench.index_memory import store_runs
from collector.store.database import open_writer
from scoring import ensure_verdict_schema

_RUNS = 150_000
_BATCH = 10_000


def _art_bytes(connection: duckdb.DuckDBPyConnection) -> int:
    rows = connection.execute(
        "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'ART_INDEX'"
    ).fetchall()
    return int(rows[0][0])


def test_a_small_duckdb_share_checkpoints_a_history_past_the_old_index_ceiling(tmp_path: Path) -> None:
    path = tmp_path / "history.duckdb"
    connection = open_writer(path, memory_limit="48MiB", threads=1)
    try:
        ensure_verdict_schema(connection)
        assert connection.execute("SELECT index_name FROM duckdb_indexes()").fetchall() == []
        for stored in range(_BATCH, _RUNS + 1, _BATCH):
            store_runs(connection, _BATCH)
            if stored % 50_000 == 0:
                connection.execute("CHECKPOINT")  # what failed past the ceiling, invalidating the file
                assert _art_bytes(connection) == 0
        counts = connection.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM executions), "
            "(SELECT count(*) FROM verdicts)"
        ).fetchall()
    finally:
        connection.close()
    assert counts == [(_RUNS, _RUNS, _RUNS)]
    reopened = open_writer(path, memory_limit="48MiB", threads=1)  # and a restart reads it whole
    try:
        store_runs(reopened, _BATCH)
        reopened.execute("CHECKPOINT")
        assert reopened.execute("SELECT count(*) FROM run_traces").fetchall() == [(_RUNS + _BATCH,)]
    finally:
        reopened.close()

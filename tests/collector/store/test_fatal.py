"""When DuckDB invalidates the database (a commit or a checkpoint that ran out of memory, an I/O error
inside one), every later statement on the instance fails: tracescore exits with status 70 to be started
again rather than answer "retry later" for ever (collector/store/_fatal.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from collector.store._fatal import EXIT_STORAGE_INVALIDATED, cause, invalidated

# A DuckDB instance with far too little memory for what it is asked to commit: DuckDB invalidates it.
_INVALIDATE = """
import duckdb, sys
connection = duckdb.connect(sys.argv[1], config={"memory_limit": "8MB", "threads": 1})
connection.execute("CREATE TABLE t (a VARCHAR USING COMPRESSION zstd, b VARCHAR)")
connection.execute("CREATE INDEX t_b ON t (b)")
try:
    connection.execute(
        "INSERT INTO t SELECT md5(i::VARCHAR) || repeat('x', 200), md5(i::VARCHAR) FROM range(100000) r(i)"
    )
except duckdb.Error:
    pass
"""
_TOO_MUCH = (
    "INSERT INTO t SELECT md5(i::VARCHAR) || repeat('x', 200), md5(i::VARCHAR) FROM range(100000) r(i)"
)


def test_an_invalidated_database_is_told_from_an_ordinary_error(tmp_path: Path) -> None:
    connection = duckdb.connect(str(tmp_path / "x.duckdb"), config={"memory_limit": "8MB", "threads": 1})
    connection.execute("CREATE TABLE t (a VARCHAR USING COMPRESSION zstd, b VARCHAR)")
    connection.execute("CREATE INDEX t_b ON t (b)")
    with pytest.raises(duckdb.Error) as ran_out:
        connection.execute(_TOO_MUCH)
    assert not invalidated(ran_out.value)  # the commit that failed; what follows is refused
    with pytest.raises(duckdb.Error) as after:
        connection.execute("SELECT 1").fetchall()
    assert invalidated(after.value)
    with pytest.raises(duckdb.Error) as ordinary:
        duckdb.connect().execute("SELECT * FROM no_such_table")
    assert not invalidated(ordinary.value)


def test_the_process_exits_with_status_70_and_says_why(tmp_path: Path) -> None:
    script = (
        _INVALIDATE
        + """
import logging
from collector.store._fatal import exit_if_invalidated
logging.basicConfig(level=logging.INFO)
try:
    connection.execute("SELECT 1").fetchall()
except duckdb.Error as exc:
    exit_if_invalidated(duckdb.CatalogException("an ordinary error"))  # returns
    print("still running", flush=True)
    exit_if_invalidated(exc)
print("not reached", flush=True)
"""
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "x.duckdb")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == EXIT_STORAGE_INVALIDATED == 70, done.stderr
    assert done.stdout == "still running\n"
    assert "DuckDB invalidated the database" in done.stderr and "exits with status 70" in done.stderr


# A checkpoint that runs out of memory: the commits before it fit in 8 MB, the checkpoint does not.
_FAILING_CHECKPOINT = """
import logging, sys
from pathlib import Path
from collector.store._checkpointer import Checkpointer
from collector.store.database import open_writer
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
connection = open_writer(Path(sys.argv[1]), memory_limit="8MB", threads=1)
connection.execute("CREATE TABLE t (a VARCHAR USING COMPRESSION zstd, b VARCHAR)")
connection.execute("CREATE INDEX t_b ON t (b)")
for k in range(40):
    connection.execute(
        "INSERT INTO t SELECT md5(i::VARCHAR) || repeat('x', 200), md5(i::VARCHAR) FROM range(?, ?) r(i)",
        [k * 2000, (k + 1) * 2000],
    )
Checkpointer(connection, None, 3600, 1 << 40, lambda took: None).checkpoint()
print("not reached", flush=True)
"""


def test_a_failed_checkpoint_logs_duckdbs_own_cause_first(tmp_path: Path) -> None:
    """Issue 33: the rollback after a failed checkpoint fails too once DuckDB has invalidated the
    database, and its error ("database has been invalidated because of a previous fatal error") was all
    the log said. DuckDB's own words (e.g. "failed to allocate data of size 1.5 MiB (62.8 MiB/64.0 MiB
    used)") are logged first, and the exit line names them too."""
    done = subprocess.run(
        [sys.executable, "-c", _FAILING_CHECKPOINT, str(tmp_path / "x.duckdb")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == EXIT_STORAGE_INVALIDATED, done.stderr
    assert "not reached" not in done.stdout
    records = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "CRITICAL"))]
    cause = "Failed to create checkpoint because of error: failed to "  # then "allocate" or "pin" …
    assert records[0].startswith("WARNING checkpoint failed") and cause in records[0], done.stderr
    assert records[-1].startswith("CRITICAL DuckDB invalidated the database") and cause in records[-1]


def test_the_cause_named_is_duckdbs_own_not_the_invalidation_that_followed() -> None:
    first = duckdb.OutOfMemoryException("failed to allocate data of size 1.5 MiB (62.8 MiB/64.0 MiB used)")
    after = duckdb.FatalException(
        "FATAL Error: Failed: database has been invalidated (a previous fatal error)"
    )
    after.__context__ = first  # raised while the first was being handled, as the rollback's was
    assert cause(after) == "failed to allocate data of size 1.5 MiB (62.8 MiB/64.0 MiB used)"
    quoting = duckdb.FatalException(
        "FATAL Error: Failed: database has been invalidated because of a previous fatal error.\n"
        'Original error: "Failed to create checkpoint because of error: failed to pin block\n\nPossible …"'
    )
    assert cause(quoting) == "Failed to create checkpoint because of error: failed to pin block"
    alone = duckdb.FatalException("FATAL Error: database has been invalidated")
    assert cause(alone) == "FATAL Error: database has been invalidated"

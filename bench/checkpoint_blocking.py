"""Which commits a DuckDB checkpoint holds up: ones to the same database file, ones to another file.

A writer thread commits small batches (500 rows, as a group commit does) every 10 ms while another
cursor checkpoints ~100 MB of WAL; the script prints how long the commits made during the checkpoint
waited. Once with both in one database file (what tracescore does today), once with the commits going to
a second file ATTACHed to the same instance. The figures are in bench/README.md ("Targets not met").

    python -m bench.checkpoint_blocking
"""

from __future__ import annotations

import random
import shutil
import string
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import pyarrow as pa

BATCH_ROWS = 500
WAL_BATCHES = 60  # of 5,000 rows: ~100 MB of WAL to checkpoint


def _rows(count: int, first: int, text: str) -> pa.Table:
    # ~300 characters of non-repeating text a row, like span attributes; ids unique per row.
    starts = [(first + i) * 7919 % (len(text) - 300) for i in range(count)]
    return pa.table(
        {
            "trace_id": [f"{first + i:032x}" for i in range(count)],
            "attributes": [f'{{"a":"{text[s : s + 300]}"}}' for s in starts],
            "ingest_seq": list(range(first, first + count)),
        }
    )


def _append(cursor: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    cursor.register("_rows", rows)
    try:
        cursor.execute(f"INSERT INTO {table} SELECT * FROM _rows")
    finally:
        cursor.unregister("_rows")


def measure(other_file: bool) -> tuple[float, int, float]:
    """(checkpoint seconds, commits made during it, the longest of those commits in ms)."""
    directory = Path(tempfile.mkdtemp(prefix="tracescore-ckpt-"))
    con = duckdb.connect(str(directory / "a.duckdb"), config={"checkpoint_threshold": "100GB"})
    target = "a.main.spans"
    if other_file:
        con.execute(f"ATTACH '{directory / 'b.duckdb'}' AS b")
        target = "b.main.spans"
    for table in {"a.main.spans", target}:
        con.execute(
            f"CREATE TABLE {table} (trace_id VARCHAR, attributes JSON USING COMPRESSION zstd, "
            "ingest_seq BIGINT)"
        )
    text = "".join(random.Random(7).choices(string.ascii_letters, k=400_000))
    for batch in range(WAL_BATCHES):
        _append(con, "a.main.spans", _rows(5_000, batch * 5_000, text))
    batches = [_rows(BATCH_ROWS, 10**7 + i * BATCH_ROWS, text) for i in range(100)]

    commits: list[tuple[float, float]] = []
    stop = threading.Event()

    def write() -> None:
        cursor = con.cursor()
        index = 0
        while not stop.is_set():
            started = time.monotonic()
            cursor.begin()
            _append(cursor, target, batches[index % len(batches)])
            cursor.commit()
            commits.append((started, time.monotonic() - started))
            index += 1
            time.sleep(0.01)

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(1.0)
    checkpointer = con.cursor()
    begun = time.monotonic()
    checkpointer.execute("CHECKPOINT a")
    ended = time.monotonic()
    time.sleep(0.5)
    stop.set()
    writer.join()
    con.close()
    shutil.rmtree(directory)
    during = [took for started, took in commits if begun <= started <= ended]
    return ended - begun, len(during), max(during, default=0.0) * 1000


def main() -> None:
    for other_file, label in ((False, "same file"), (True, "another ATTACHed file")):
        seconds, count, longest = measure(other_file)
        print(
            f"commits to {label}: checkpoint {seconds:.2f} s; {count} commit(s) began during it, "
            f"the longest took {longest:.0f} ms"
        )


if __name__ == "__main__":
    main()

"""Which commits a DuckDB checkpoint holds up: ones to the same database file, ones to another file.

A writer thread commits small batches (500 rows, as a group commit does) every 10 ms while another
cursor checkpoints ~100 MB of WAL; the script prints how long the commits made during the checkpoint
waited: with a plain CHECKPOINT (what tracescore did before issue 17) into the same table, into a second
file ATTACHed to the same instance, and with tracescore's own concurrent checkpoint
(collector/store/_checkpointer.py) into the same table, into another table of the same file, and as the
server runs it: into the active one of two partitions of the table (collector/store/partitions.py), the
writer switching to it just before the checkpoint, which then writes the other. The figures are in
bench/README.md.

    python -m bench.checkpoint_blocking
"""

from __future__ import annotations

import contextlib
import random
import shutil
import string
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import duckdb
import pyarrow as pa

from collector.store._checkpointer import Checkpointer
from collector.store.partitions import Partitions

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


class Scenario(NamedTuple):
    target: str  # where the commits go; PARTITIONED: the writer's active partition of `spans`
    concurrent: bool  # tracescore's concurrent checkpoint, or a plain CHECKPOINT
    # A second cursor storing verdicts meanwhile, as online scoring does: NO_VERDICTS, into one table
    # the checkpoint also writes (ONE_TABLE), or into the active one of two partitions (PARTITIONED).
    verdicts: str = ""


PARTITIONED = "partitioned"
ONE_TABLE = "one table"
SCENARIOS = {
    "same file, same table, plain CHECKPOINT": Scenario("a.main.spans", False),
    "another ATTACHed file, plain CHECKPOINT": Scenario("b.main.spans", False),
    "same file, same table, tracescore's concurrent checkpoint": Scenario("a.main.spans", True),
    "same file, another table, tracescore's concurrent checkpoint": Scenario("a.main.executions", True),
    "same file, two partitions, the writer switching just before the concurrent checkpoint": Scenario(
        PARTITIONED, True
    ),
    "the same, with verdicts stored meanwhile into one table the checkpoint writes": Scenario(
        PARTITIONED, True, ONE_TABLE
    ),
    "the same, with verdicts stored into two partitions too (tracescore's setup)": Scenario(
        PARTITIONED, True, PARTITIONED
    ),
}


def _create(con: duckdb.DuckDBPyConnection, table: str) -> None:
    con.execute(
        f"CREATE TABLE {table} (trace_id VARCHAR, attributes JSON USING COMPRESSION zstd, ingest_seq BIGINT)"
    )


def measure(scenario: Scenario) -> tuple[float, int, float, float]:
    """(checkpoint seconds, the writer's commits that overlapped it, the longest of those in ms, the
    longest of its other commits in ms: what the machine's load alone costs a commit)."""
    target, concurrent, verdicts = scenario
    partitions = Partitions() if target == PARTITIONED else None
    directory = Path(tempfile.mkdtemp(prefix="tracescore-ckpt-"))
    con = duckdb.connect(str(directory / "a.duckdb"), config={"checkpoint_threshold": "100GB"})
    con.execute("CREATE TABLE tracescore_state (key VARCHAR PRIMARY KEY, value BIGINT)")
    if target.startswith("b."):
        con.execute(f"ATTACH '{directory / 'b.duckdb'}' AS b")
    first = "a.main.spans_p0" if partitions else "a.main.spans"
    for table in {first, "a.main.spans_p1"} if partitions else {first, target}:
        _create(con, table)
    verdict_tables = {PARTITIONED: ("verdicts_p0", "verdicts_p1"), ONE_TABLE: ("verdicts_one",)}.get(
        verdicts, ()
    )
    for table in verdict_tables:
        _create(con, table)
    text = "".join(random.Random(7).choices(string.ascii_letters, k=400_000))
    for batch in range(WAL_BATCHES):
        _append(con, first, _rows(5_000, batch * 5_000, text))
    for batch in range(WAL_BATCHES // 3 if verdict_tables else 0):  # verdicts to checkpoint too
        _append(con, verdict_tables[0], _rows(5_000, 10**6 + batch * 5_000, text))
    batches = [_rows(BATCH_ROWS, 10**7 + i * BATCH_ROWS, text) for i in range(100)]

    commits: list[tuple[float, float]] = []
    stop = threading.Event()

    def write(table: str, rows: int, pause_s: float, times: list[tuple[float, float]]) -> None:
        """Commit `rows` rows every `pause_s` into `table`, or into its active partition when it has two."""
        cursor = con.cursor()
        index = 0
        while not stop.is_set():
            with partitions.writing() if partitions else contextlib.nullcontext():
                started = time.monotonic()
                cursor.begin()
                into = partitions.active(table) if partitions and table in ("spans", "verdicts") else table
                _append(cursor, into, batches[index % len(batches)].slice(0, rows))
                cursor.commit()
                times.append((started, time.monotonic() - started))
            index += 1
            time.sleep(pause_s)

    writer = "spans" if partitions else target
    threads = [threading.Thread(target=write, args=(writer, BATCH_ROWS, 0.01, commits))]
    if verdicts:  # online scoring's cursor: partitioned "verdicts", or the one table "verdicts_one"
        table = "verdicts" if verdicts == PARTITIONED else verdict_tables[0]
        threads.append(threading.Thread(target=write, args=(table, 50, 0.02, [])))
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    begun = time.monotonic()
    if concurrent:  # collector/store/_checkpointer.py, as the server runs it
        before = partitions.switch if partitions else None
        checkpointer = Checkpointer(con, None, 3600.0, 1 << 62, lambda _: None, before=before)
        checkpointer.checkpoint()
    else:
        con.cursor().execute("CHECKPOINT a")
    ended = time.monotonic()
    time.sleep(0.5)
    stop.set()
    for thread in threads:
        thread.join()
    con.close()
    shutil.rmtree(directory)
    during = [took for started, took in commits if started <= ended and started + took >= begun]
    others = [took for started, took in commits if started > ended or started + took < begun]
    return ended - begun, len(during), max(during, default=0.0) * 1000, max(others, default=0.0) * 1000


def main() -> None:
    """`python -m bench.checkpoint_blocking [WORD]`: only the scenarios whose label contains WORD."""
    wanted = sys.argv[1] if len(sys.argv) > 1 else ""
    for label, scenario in SCENARIOS.items():
        if wanted not in label:
            continue
        seconds, count, longest, outside = measure(scenario)
        print(
            f"{label}: checkpoint {seconds:.2f} s; {count} commit(s) overlapped it, the longest took "
            f"{longest:.0f} ms (the longest of the commits before and after it: {outside:.0f} ms)",
            flush=True,
        )


if __name__ == "__main__":
    main()

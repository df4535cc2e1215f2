"""The live UI's reads (collector/serve/ui/_reads.py) on a database of a million runs.

Builds the benchmark history (bench/history.py: complete runs, three executions and one request each,
completed one per second) with one verdict per run (one in ten `fail`, one in fifty `error`), then
times each page's read as `serve` runs it: the newest page of runs, the tenth page by cursor, pages
filtered by task, by label, by spec and label, by an attribute (`--where`), one run, one task.

    .venv/bin/python -m bench.ui_pages [--runs 1000000] [--db PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from bench.history import build
from collector.serve.ui import _details as details
from collector.serve.ui import _reads as reads
from scoring import ensure_verdict_schema


def _add_verdicts_and_times(path: Path) -> None:
    connection = duckdb.connect(str(path))
    ensure_verdict_schema(connection)
    for partition in ("run_traces_p0", "run_traces_p1"):  # completed a second after each run ended
        connection.execute(f"UPDATE {partition} SET completed_at = (end_time + INTERVAL 1 SECOND)::TIMESTAMP")
    connection.execute(
        """
        INSERT INTO verdicts_p0 (run_id, trace_id, task_id, spec, spec_fingerprint, profile, label, passed,
            value, reason, checks, run_version, schema_version, scored_at, verdict)
        SELECT run_id, trace_id, task_id, 'bench', 'f', 'default', label, label = 'pass',
               CASE label WHEN 'pass' THEN 1.0 WHEN 'fail' THEN 0.5 END, reason, '[]', 1, 1, completed_at,
               json_object('run_id', run_id, 'trace_id', trace_id, 'task', task_id, 'spec', 'bench',
                           'label', label, 'reason', reason, 'checks', json('[]'), 'run_version', 1)
        FROM (
            SELECT *, CASE WHEN hash(run_id) % 50 = 0 THEN 'error' WHEN hash(run_id) % 10 = 3 THEN 'fail'
                      ELSE 'pass' END AS label,
                   CASE WHEN hash(run_id) % 10 = 3 THEN 'quote: arguments differ' END AS reason
            FROM run_traces
        )
        """
    )
    connection.execute("CHECKPOINT")
    connection.close()


def _time(read: Callable[[duckdb.DuckDBPyConnection], Any], connection: duckdb.DuckDBPyConnection) -> float:
    timings = []
    for _ in range(5):
        cursor = connection.cursor()
        started = time.perf_counter()
        read(cursor)
        timings.append((time.perf_counter() - started) * 1000)
        cursor.close()
    return statistics.median(timings)


def measure(path: Path) -> dict[str, float]:
    connection = duckdb.connect(str(path), read_only=True)
    first = reads.runs_page(connection.cursor(), reads.RunFilter(), None, 50)
    after: reads.Cursor | None = None
    for _ in range(9):
        page = reads.runs_page(connection.cursor(), reads.RunFilter(), after, 50)
        after = reads.Cursor.parse(page["next"])
    some_run = first["runs"][17]["run_id"]
    cases: dict[str, Callable[[duckdb.DuckDBPyConnection], Any]] = {
        "runs, newest page": lambda c: reads.runs_page(c, reads.RunFilter(), None, 50),
        "runs, tenth page (cursor)": lambda c: reads.runs_page(c, reads.RunFilter(), after, 50),
        "runs of one task": lambda c: reads.runs_page(c, reads.RunFilter(task="task-7"), None, 50),
        "runs labelled fail": lambda c: reads.runs_page(c, reads.RunFilter(label="fail"), None, 50),
        "runs of a spec labelled error": lambda c: reads.runs_page(
            c, reads.RunFilter(spec="bench", label="error"), None, 50
        ),
        "runs by attribute (--where)": lambda c: reads.runs_page(
            c, reads.RunFilter(where=(("service.name", "bench"),)), None, 50
        ),
        "one run": lambda c: details.run_detail(c, some_run),
        "one task": lambda c: details.task_detail(c, "task-7"),
    }
    found = {name: round(_time(read, connection), 1) for name, read in cases.items()}
    connection.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, help="reuse (or build once) this database")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = args.db or Path(scratch) / "ui.duckdb"
        if not path.exists():
            started = time.perf_counter()
            build(path, args.runs)
            _add_verdicts_and_times(path)
            print(f"built {args.runs} runs in {time.perf_counter() - started:.0f} s")
        results = measure(path)
    width = max(len(name) for name in results)
    for name, ms in results.items():
        print(f"{name:<{width}}  {ms:>8.1f} ms (median of 5)")
    print(json.dumps({"runs": args.runs, "median_ms": results}))


if __name__ == "__main__":
    main()

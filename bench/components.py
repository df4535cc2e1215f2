"""Where the ingest time goes: CPU microseconds per span for each stage of tracescore's path, on the
seeded workload, measured with the thread's CPU clock (so other processes on the machine distort it
less than wall time), best of several rounds.

    .venv/bin/python -m bench.components [--traces 3000]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.workload import build
from collector._database import open_writer
from collector._decode_pb import decode_protobuf
from collector._recognise import recognise
from collector._resolve import resolve_trace
from collector._rows import (
    EXECUTION_EXPRESSIONS,
    executions_table,
    requests_table,
    run_traces_table,
    spans_table,
)
from collector._server import GC_THRESHOLDS
from collector._tracker import Tracker


def _best(rounds: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        started = time.thread_time()
        result = run()
        best = min(best, time.thread_time() - started)
    return best, result


def measure(traces: int, rounds: int = 3) -> dict[str, float]:
    gc.set_threshold(*GC_THRESHOLDS)  # as `serve` runs: the default ones tax every stage here too
    workload = build(traces, seed=7)
    n = workload.spans
    figures: dict[str, float] = {}

    seconds, decoded = _best(rounds, lambda: [decode_protobuf(body) for body in workload.requests])
    figures["decode (protobuf to spans)"] = seconds
    spans = [s for d in decoded for s in d.spans]
    seconds, recognised = _best(rounds, lambda: [recognise(s) for s in spans])
    figures["recognise (executions, requests, nodes)"] = seconds
    seconds, tables = _best(rounds, lambda: [spans_table(d.spans, 1, 0) for d in decoded])
    figures["spans rows to Arrow"] = seconds

    # DuckDB's part, as the writer does it: group commits (4 requests, as with 4 concurrent clients)
    # then, separately, the checkpoint that compresses what the WAL holds into the file. Thread CPU
    # time misses DuckDB's own threads; the server is pinned to one core, so there are none to miss.
    groups = [pa.concat_tables(tables[i : i + 4]) for i in range(0, len(tables), 4)]

    def insert_spans() -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as tmp:
            connection = open_writer(Path(tmp) / "c.duckdb", threads=1)
            started = time.thread_time()
            for table in groups:
                connection.begin()
                connection.register("b", table)
                connection.execute(f"INSERT INTO spans ({', '.join(table.column_names)}) SELECT * FROM b")
                connection.unregister("b")
                connection.commit()
            inserted = time.thread_time()
            connection.execute("CHECKPOINT")
            checkpointed = time.thread_time()
            connection.close()
        return inserted - started, checkpointed - inserted

    spans_insert = [insert_spans() for _ in range(rounds)]
    figures["DuckDB insert + commit of spans"] = min(i for i, _ in spans_insert)
    figures["DuckDB checkpoint of spans"] = min(c for _, c in spans_insert)

    def track() -> Tracker:
        tracker = Tracker(2.0, 30.0, 300.0)
        for span, item in zip(spans, recognised, strict=True):
            tracker.add(span.trace_id, item, 1, 0.0)
        return tracker

    seconds, tracker = _best(rounds, track)
    figures["run tracking (in memory)"] = seconds
    states = list(tracker.traces.values())
    seconds, resolutions = _best(
        rounds,
        lambda: [
            resolve_trace(s.trace_id, s.nodes, s.executions.values(), s.requests.values()) for s in states
        ],
    )
    figures["run resolution at completion"] = seconds

    def derived() -> tuple[pa.Table, pa.Table, pa.Table]:
        return (
            executions_table([(e, 1) for r in resolutions for e in r.executions]),
            requests_table([(q, 1) for r in resolutions for q in r.requests]),
            run_traces_table([(run, 1, 1, 1) for r in resolutions for run in r.runs], 0),
        )

    seconds, derived_tables = _best(rounds, derived)
    figures["executions, requests, runs to Arrow"] = seconds

    names = ("executions", "tool_requests", "run_traces")
    runs_per_commit = 500  # one completion commit per ~500 traces, as the writer does under load

    def insert_derived() -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as tmp:
            connection = open_writer(Path(tmp) / "c.duckdb", threads=1)
            commits = max(1, derived_tables[2].num_rows // runs_per_commit)
            started = time.thread_time()
            for part in range(commits):
                connection.begin()
                for name, table in zip(names, derived_tables, strict=True):
                    size = -(-table.num_rows // commits)
                    chunk = table.slice(part * size, size)
                    connection.register("b", chunk)
                    columns = chunk.column_names
                    values = ", ".join(
                        EXECUTION_EXPRESSIONS.get(c, c) if name == "executions" else c for c in columns
                    )
                    connection.execute(f"INSERT INTO {name} ({', '.join(columns)}) SELECT {values} FROM b")
                    connection.unregister("b")
                connection.commit()
            inserted = time.thread_time()
            connection.execute("CHECKPOINT")
            checkpointed = time.thread_time()
            connection.close()
        return inserted - started, checkpointed - inserted

    derived_insert = [insert_derived() for _ in range(rounds)]
    figures["DuckDB insert + commit of executions, requests, runs"] = min(i for i, _ in derived_insert)
    figures["DuckDB checkpoint of executions, requests, runs"] = min(c for _, c in derived_insert)
    return {name: seconds * 1e6 / n for name, seconds in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=3000)
    args = parser.parse_args()
    figures = measure(args.traces)
    width = max(map(len, figures))
    for name, micros in figures.items():
        print(f"{name:<{width}}  {micros:6.1f} µs/span")
    total = sum(figures.values())
    print(f"{'total':<{width}}  {total:6.1f} µs/span  (≈ {1e6 / total:,.0f} spans/s on one core)")


if __name__ == "__main__":
    main()

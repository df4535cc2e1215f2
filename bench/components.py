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
from collector.decode.from_protobuf import decode_protobuf
from collector.recognise.span import recognise
from collector.serve.server import GC_THRESHOLDS
from collector.store._resolve import resolve_trace
from collector.store._tracker import Tracker
from collector.store.database import open_writer
from collector.store.rows import (
    EXECUTION_EXPRESSIONS,
    executions_table,
    requests_table,
    run_traces_table,
    spans_table,
)
from collector.store.schema import partitions


def _best(rounds: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        started = time.thread_time()
        result = run()
        best = min(best, time.thread_time() - started)
    return best, result


def _timed_commits(commits: list[list[tuple[str, pa.Table]]]) -> tuple[float, float]:
    """Thread CPU seconds to insert these transactions (each a list of (table, rows)) into a fresh
    writer database, then to checkpoint it."""
    with tempfile.TemporaryDirectory() as tmp:
        connection = open_writer(Path(tmp) / "c.duckdb", threads=1)
        started = time.thread_time()
        for inserts in commits:
            connection.begin()
            for name, rows in inserts:
                connection.register("b", rows)
                columns = rows.column_names
                values = ", ".join(
                    EXECUTION_EXPRESSIONS.get(c, c) if name == "executions" else c for c in columns
                )
                # Into the partition the writer appends to first (collector/store/partitions.py).
                partition = partitions(name)[0]
                connection.execute(f"INSERT INTO {partition} ({', '.join(columns)}) SELECT {values} FROM b")
                connection.unregister("b")
            connection.commit()
        inserted = time.thread_time()
        connection.execute("CHECKPOINT")
        checkpointed = time.thread_time()
        connection.close()
    return inserted - started, checkpointed - inserted


def _store_figures(figures: dict[str, float], label: str, timings: list[tuple[float, float]]) -> None:
    figures[f"DuckDB insert + commit of {label}"] = min(i for i, _ in timings)
    figures[f"DuckDB checkpoint of {label}"] = min(c for _, c in timings)


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

    spans_commits = [[("spans", table)] for table in groups]
    _store_figures(figures, "spans", [_timed_commits(spans_commits) for _ in range(rounds)])

    def track() -> Tracker:
        tracker = Tracker(2.0, 30.0, 300.0, max_retained_bytes=32 * 1024 * 1024)
        for span, item in zip(spans, recognised, strict=True):
            tracker.add(span.trace_id, item, 1, 0.0)
        return tracker

    seconds, tracker = _best(rounds, track)
    figures["run tracking (in memory)"] = seconds
    states = list(tracker.traces.values())
    seconds, resolutions = _best(
        rounds,
        lambda: [
            resolve_trace(s.trace_id, s.nodes, s.executions.values(), s.requests.values(), s.outcomes)
            for s in states
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
    # One completion commit per ~500 traces, as the writer does under load.
    commits = max(1, derived_tables[2].num_rows // 500)
    derived_commits = []
    for part in range(commits):
        chunks = []
        for name, table in zip(names, derived_tables, strict=True):
            size = -(-table.num_rows // commits)
            chunks.append((name, table.slice(part * size, size)))
        derived_commits.append(chunks)
    derived_label = "executions, requests, runs"
    _store_figures(figures, derived_label, [_timed_commits(derived_commits) for _ in range(rounds)])
    return {name: seconds * 1e6 / n for name, seconds in figures.items()}


def report(figures: dict[str, float]) -> str:
    width = max(map(len, figures))
    lines = [f"{name:<{width}}  {micros:6.1f} µs/span" for name, micros in figures.items()]
    total = sum(figures.values())
    lines.append(f"{'total':<{width}}  {total:6.1f} µs/span  (≈ {1e6 / total:,.0f} spans/s on one core)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=3000)
    args = parser.parse_args()
    print(report(measure(args.traces)))


if __name__ == "__main__":
    main()

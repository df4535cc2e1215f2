"""Recognition in Python against recognition in DuckDB SQL (collector/recognise/in_sql.py), CPU
microseconds per span on the seeded workload, best of several rounds. SQL runs batch by batch as a
writer would: 4 requests a batch (2,048 spans, a group commit under moderate load) and 40 (20,480
spans, the writer's largest batch), so the fixed cost of planning the query shows apart from the cost
per span. DuckDB runs with one thread, in the calling thread, so the thread's CPU clock counts its work.
The time to plan the query once (on an empty batch) is printed as well.

    .venv/bin/python -m bench.sql_recognition [--traces 3000]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa

from bench.workload import build
from collector.decode.from_protobuf import decode_protobuf
from collector.recognise.conventions import recognise_execution
from collector.recognise.in_sql import recognise_in_sql, recognition_query
from collector.recognise.requests import extract_requests
from collector.recognise.span import recognise
from collector.serve.server import GC_THRESHOLDS
from collector.store.rows import SPAN_SCHEMA, spans_table


def _best(rounds: int, run: Callable[[], Any]) -> tuple[float, float]:
    """(thread CPU seconds, wall seconds) of the fastest round."""
    best = (float("inf"), float("inf"))
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.thread_time()
        run()
        best = min(best, (time.thread_time() - cpu, time.perf_counter() - wall))
    return best


def measure(traces: int, rounds: int = 5) -> dict[str, tuple[float, float]]:
    gc.set_threshold(*GC_THRESHOLDS)
    workload = build(traces, seed=7)
    decoded = [decode_protobuf(body) for body in workload.requests]
    spans = [s for d in decoded for s in d.spans]
    tables = [spans_table(d.spans, 1, 0) for d in decoded]
    connection = duckdb.connect(config={"threads": 1})

    def batches(size: int) -> list[pa.Table]:
        return [pa.concat_tables(tables[i : i + size]) for i in range(0, len(tables), size)]

    def in_sql(size: int) -> Callable[[], None]:
        def run() -> None:
            for batch in batches(size):
                connection.register("batch", batch)
                recognise_in_sql(connection, "batch")
                connection.unregister("batch")

        return run

    def in_sql_arrow(size: int) -> Callable[[], None]:
        query = recognition_query("batch")

        def run() -> None:
            for batch in batches(size):
                connection.register("batch", batch)
                connection.sql(query).to_arrow_table()
                connection.unregister("batch")

        return run

    connection.register("batch", SPAN_SCHEMA.empty_table())
    plan_cpu, plan_wall = _best(rounds, lambda: connection.sql(recognition_query("batch")).to_arrow_table())
    connection.unregister("batch")
    print(
        f"planning the SQL query (an empty batch): {plan_cpu * 1e3:.1f} ms CPU, {plan_wall * 1e3:.1f} ms wall"
    )
    figures = {
        "python: executions + requests": _best(
            rounds, lambda: [(recognise_execution(s), extract_requests(s)) for s in spans]
        ),
        "python: everything (+ nodes, outcomes)": _best(rounds, lambda: [recognise(s) for s in spans]),
        "sql, 2,048-span batches, rows to Python": _best(rounds, in_sql(4)),
        "sql, 2,048-span batches, Arrow out": _best(rounds, in_sql_arrow(4)),
        "sql, 20,480-span batches, rows to Python": _best(rounds, in_sql(40)),
        "sql, 20,480-span batches, Arrow out": _best(rounds, in_sql_arrow(40)),
    }
    return {name: (cpu * 1e6 / len(spans), wall * 1e6 / len(spans)) for name, (cpu, wall) in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=3000)
    args = parser.parse_args()
    figures = measure(args.traces)
    width = max(map(len, figures))
    print(f"{'':<{width}}  {'CPU':>6}  {'wall':>6}  µs/span")
    for name, (cpu, wall) in figures.items():
        print(f"{name:<{width}}  {cpu:6.2f}  {wall:6.2f}")


if __name__ == "__main__":
    main()

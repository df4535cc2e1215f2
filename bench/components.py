"""Where the ingest time goes: CPU microseconds per span for each stage of tracescore's path, on the
seeded workload, measured with the thread's CPU clock (so other processes on the machine distort it
less than wall time), best of several rounds.

    .venv/bin/python -m bench.components [--traces 3000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.workload import build
from collector._database import open_writer
from collector._decode_pb import decode_protobuf
from collector._recognise import recognise
from collector._resolve import resolve_trace
from collector._rows import executions_table, requests_table, spans_table
from collector._tracker import Tracker


def _best(rounds: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        started = time.thread_time()
        result = run()
        best = min(best, time.thread_time() - started)
    return best, result


def measure(traces: int, rounds: int = 3) -> dict[str, float]:
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

    def insert() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            connection = open_writer(Path(tmp) / "c.duckdb")
            for table in tables:  # group commits of 4 requests, as with 4 concurrent clients
                connection.register("b", table)
                connection.execute(f"INSERT INTO spans ({', '.join(table.column_names)}) SELECT * FROM b")
                connection.unregister("b")
            connection.close()

    figures["DuckDB insert of spans"], _ = _best(rounds, insert)

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

    def derived() -> None:
        executions_table([(e, 1) for r in resolutions for e in r.executions])
        requests_table([(q, 1) for r in resolutions for q in r.requests])

    figures["executions + requests to Arrow"], _ = _best(rounds, derived)
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

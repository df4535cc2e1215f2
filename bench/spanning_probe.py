"""What the reads of `run_traces` on the verdict's path cost (`python -m bench.spanning_probe`), against a
`run_traces` of N runs, each asked as the join of an unnested list (before) and as an IN list of
parameters (now):
- online scoring's one read per batch: which runs of a batch also have stored rows in another trace
  (collector/store/live_evidence.py), by `run_id`;
- the writer's lookup, per group commit, of the traces new to this process: were they completed before
  (collector/store/writer.py `_stored_span_ids`, `_adopt_stored`), by `trace_id`.

DuckDB answers the IN list from the index; the join it plans as a hash join over a scan of the whole
table, so its cost grows with the history.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from collector.store.database import open_writer

_JOINED = (
    "SELECT DISTINCT w.run_id FROM (SELECT unnest(?::VARCHAR[]) AS run_id, unnest(?::VARCHAR[]) AS "
    "trace_id) w JOIN run_traces ON run_traces.run_id = w.run_id WHERE run_traces.trace_id <> w.trace_id"
)


_JOINED_TRACES = (
    "SELECT DISTINCT trace_id FROM (SELECT unnest(?::VARCHAR[]) AS wanted) w "
    "JOIN run_traces ON run_traces.trace_id = w.wanted"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=500_000, help="runs stored in run_traces")
    parser.add_argument("--batch", type=int, default=500, help="runs asked at once (500 at most online)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        connection = open_writer(Path(tmp) / "probe.duckdb")
        ids = [uuid.uuid4().hex for _ in range(args.runs)]
        connection.execute(
            "INSERT INTO run_traces_p0 (run_id, trace_id, root_span_id, status, version, n_spans, "
            "n_executions, n_requests, completed_at, min_seq, max_seq) "
            "SELECT r, r, r, 'complete', 1, 1, 0, 0, now(), 1, 1 FROM unnest(?::VARCHAR[]) t(r)",
            [ids],
        )
        connection.execute("CHECKPOINT")
        timings: dict[str, list[float]] = {
            "by run_id, joined (before)": [],
            "by run_id, IN list (now)": [],
            "by trace_id, joined (before)": [],
            "by trace_id, IN list (now)": [],
        }
        for _ in range(args.repeat):
            batch = [uuid.uuid4().hex for _ in range(args.batch - 1)] + [ids[len(ids) // 2]]
            started = time.perf_counter()
            connection.execute(_JOINED, [batch, batch]).fetchall()
            timings["by run_id, joined (before)"].append(time.perf_counter() - started)
            started = time.perf_counter()
            connection.execute(
                f"SELECT run_id, trace_id FROM run_traces WHERE run_id IN ({', '.join('?' * len(batch))})",
                batch,
            ).fetchall()
            timings["by run_id, IN list (now)"].append(time.perf_counter() - started)
            started = time.perf_counter()
            connection.execute(_JOINED_TRACES, [batch]).fetchall()
            timings["by trace_id, joined (before)"].append(time.perf_counter() - started)
            started = time.perf_counter()
            connection.execute(
                f"SELECT DISTINCT trace_id FROM run_traces WHERE trace_id IN ({', '.join('?' * len(batch))})",
                batch,
            ).fetchall()
            timings["by trace_id, IN list (now)"].append(time.perf_counter() - started)
        connection.close()
    for name, values in timings.items():
        print(
            f"{args.runs:,} runs stored, {args.batch} asked about, {name}: median "
            f"{1000 * statistics.median(values):.1f} ms, max {1000 * max(values):.1f} ms"
        )


if __name__ == "__main__":
    main()

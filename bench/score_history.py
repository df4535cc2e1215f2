"""Scoring one run must cost the same whatever the size of the history.

Builds tracescore databases holding 1 k, 100 k and 1 M complete runs (3 executions and 1 request
each, written in completion order with growing ingest_seq, as the writer does), then times
`score_runs(..., run_id=X)` for runs picked across the history. Prints a table and writes JSON.

    .venv/bin/python -m bench.score_history [--sizes 1000,100000,1000000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from bench.history import SPEC, build
from scoring import score_runs


def time_single_runs(path: Path, runs: int, samples: int) -> list[float]:
    connection = duckdb.connect(str(path), read_only=True)
    rng = random.Random(7)
    picks = [rng.randrange(runs) for _ in range(samples)]
    ids = [connection.execute("SELECT md5(?)", [f"run{i}"]).fetchone()[0] for i in picks]  # type: ignore[index]
    list(score_runs(connection, [SPEC], run_id=ids[0]))  # warm the cache
    timings = []
    for run_id in ids:
        started = time.perf_counter()
        verdicts = list(score_runs(connection, [SPEC], run_id=run_id))
        timings.append((time.perf_counter() - started) * 1000)
        assert len(verdicts) == 1 and verdicts[0].run_id == run_id, "scored the wrong run"
    connection.close()
    return timings


def measure(sizes: list[int], samples: int = 50) -> list[dict[str, float]]:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for runs in sizes:
            path = Path(tmp) / f"history-{runs}.duckdb"
            started = time.perf_counter()
            build(path, runs)
            built = time.perf_counter() - started
            timings = time_single_runs(path, runs, samples)
            row = {
                "history_runs": runs,
                "executions": runs * 3,
                "build_s": round(built, 1),
                "score_one_run_p50_ms": round(statistics.median(timings), 2),
                "score_one_run_p99_ms": round(sorted(timings)[int(len(timings) * 0.99) - 1], 2),
            }
            results.append(row)
            p50, p99 = row["score_one_run_p50_ms"], row["score_one_run_p99_ms"]
            print(
                f"{runs:>9} runs ({runs * 3:>9} executions): score one run p50 {p50:7.2f} ms  "
                f"p99 {p99:7.2f} ms   (built in {built:.1f} s)",
                flush=True,
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("bench/results/score_history.json"))
    args = parser.parse_args()
    results = measure([int(s) for s in args.sizes.split(",")], args.samples)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    base = results[0]["score_one_run_p50_ms"]
    print(
        f"largest / smallest history, p50: {results[-1]['score_one_run_p50_ms'] / base:.2f}x  -> {args.out}"
    )


if __name__ == "__main__":
    main()

"""Batch scoring over a stored history (issue 7: at least 200 k executions/s, set-based).

Builds a history of ~1 M executions (bench/history.py, `varied`: errored, paused, member, slow and
non-JSON calls among them) and times, for the spec with expected tools, an argument spec, strict mode
and a latency bound:

- set-based scoring that stores every verdict (`store_history`: the verdicts never enter Python);
- set-based scoring that hands every verdict back to Python (`score_records`, what the CLI uses);
- the Python judge (`score_runs` + `store_verdicts`) on a slice of the history, for the ratio;
- `tracescore score --format json` (and the default table) end to end, printing to /dev/null.

Rates are executions judged per second of wall time, and per CPU second of the process (of the
`tracescore` child for the CLI rows; DuckDB's threads included), which a busy shared machine disturbs
far less. Prints a table, writes bench/results/score_batch.json.

    .venv/bin/python -m bench.score_batch [--executions 1000000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from bench.history import SPEC, build
from scoring import ensure_verdict_schema, score_runs, store_history, store_verdicts
from scoring.batch.score import score_records

EXECUTIONS_PER_RUN = 3
PYTHON_PERCENT = 10  # of the runs: the slice the Python judge scores


def _timed(work: Callable[[], int]) -> tuple[tuple[float, float], int]:
    """(wall, CPU) seconds and the count: on a shared machine wall time mostly measures the others."""
    started, cpu = time.perf_counter(), time.process_time()
    count = work()
    return (time.perf_counter() - started, time.process_time() - cpu), count


def _fresh(path: Path) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(str(path))
    ensure_verdict_schema(connection)
    connection.execute("CHECKPOINT")
    return connection


def _cli(path: Path, spec_file: Path, output: str) -> tuple[float, float]:
    command = [sys.executable, "-m", "collector.cli", "score", "--db", str(path), "--spec", str(spec_file)]
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([*command, "--format", output], stdout=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"tracescore score exited {done.returncode}")
    return elapsed, cpu


def _row(label: str, executions: int, timing: tuple[float, float], verdicts: int) -> dict[str, Any]:
    seconds, cpu = timing
    return {
        "path": label,
        "executions": executions,
        "verdicts": verdicts,
        "seconds": round(seconds, 2),
        "executions_per_s": round(executions / seconds),
        "cpu_seconds": round(cpu, 2),
        "executions_per_cpu_s": round(executions / cpu) if cpu else None,
    }


def measure(executions: int = 1_000_000) -> dict[str, Any]:
    runs = executions // EXECUTIONS_PER_RUN
    total = runs * EXECUTIONS_PER_RUN
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        history = Path(tmp) / "history.duckdb"
        started = time.perf_counter()
        build(history, runs, varied=True)
        built = time.perf_counter() - started
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(json.dumps(SPEC.model_dump(mode="json", exclude_none=True)))
        copies = {name: Path(tmp) / f"{name}.duckdb" for name in ("sql", "cli-json", "cli-table")}
        for copy in copies.values():
            shutil.copy(history, copy)

        connection = _fresh(copies["sql"])
        seconds, stored = _timed(lambda: store_history(connection, [SPEC]))
        rows.append(_row("set-based: score + store", total, seconds, stored))
        seconds, handed = _timed(lambda: sum(1 for _ in score_records(connection, [SPEC])))
        rows.append(_row("set-based: score into Python", total, seconds, handed))
        connection.close()

        # The Python judge on the history's first runs (what it would spend on all of them, pro rata:
        # its setup, reading every run's row once, is included).
        connection = _fresh(history)
        python_runs = max(1, runs * PYTHON_PERCENT // 100)

        def python() -> int:
            verdicts = itertools.islice(score_runs(connection, [SPEC]), python_runs)
            return store_verdicts(connection, verdicts)

        seconds, judged = _timed(python)
        python_label = f"Python judge + store ({PYTHON_PERCENT} % of runs)"
        rows.append(_row(python_label, judged * EXECUTIONS_PER_RUN, seconds, judged))
        connection.close()

        for output in ("json", "table"):
            seconds = _cli(copies[f"cli-{output}"], spec_file, output)
            rows.append(_row(f"tracescore score --format {output} > /dev/null", total, seconds, runs))
    by_path = {r["path"]: r for r in rows}
    ratio = by_path["set-based: score + store"]["executions_per_s"] / rows[2]["executions_per_s"]
    return {
        "executions": total,
        "runs": runs,
        "build_s": round(built, 1),
        "spec": SPEC.model_dump(mode="json", exclude_none=True),
        "results": rows,
        "set_based_vs_python": round(ratio, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--executions", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("bench/results/score_batch.json"))
    args = parser.parse_args()
    result = measure(args.executions)
    runs, executions = result["runs"], result["executions"]
    print(f"history: {runs:,} runs, {executions:,} executions (built in {result['build_s']} s)")
    print(f"{'path':<46} {'executions':>10} {'seconds':>8} {'executions/s':>13} {'CPU s':>7} {'/CPU s':>9}")
    for row in result["results"]:
        rate, cpu, per_cpu = row["executions_per_s"], row["cpu_seconds"], row["executions_per_cpu_s"] or 0
        print(
            f"{row['path']:<46} {row['executions']:>10,} {row['seconds']:>8.2f} {rate:>13,} {cpu:>7.2f} "
            f"{per_cpu:>9,}"
        )
    print(f"set-based / Python judge: {result['set_based_vs_python']}x")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()

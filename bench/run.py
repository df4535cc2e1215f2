"""The benchmark suite: `make bench` (or `.venv/bin/python -m bench.run`).

In one run, on this machine: the limit (bench/limit.py), tracescore end to end over gRPC with the
server on both cores and the load generator pinned to core 1 (sustained acknowledged = committed rate,
ack latency at full and at half rate, peak RSS), verdict lag under load with online scoring on, and,
when installed (`make bench` puts `arize-phoenix` into $PHOENIX_VENV, default .venv-phoenix), Arize
Phoenix on the same workload, measured until its database holds every span; then scoring: batch
`tracescore score` over ~1 M stored executions (bench/score_batch.py), 1,000 specs against 1 on the same
runs (bench/score_specs.py) and one run against 1 k, 100 k and 1 M runs of history
(bench/score_history.py). Prints one table and writes
bench/results/ingest.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import duckdb

from bench import limit, score_batch, score_history, score_specs
from bench.workload import build

ROOT = Path(__file__).resolve().parent.parent
TASKSET = shutil.which("taskset")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The servers (tracescore and Phoenix) may use both cores, as on a real 2-core host: tracescore's
# decode workers are processes of their own. The load generator is pinned to core 1 and competes for
# it (it used 6-8 % of a core at 10 k spans/s offered).
SERVER_CORES = "0,1"
LOADGEN_CORES = "1"


def _pinned(cores: str, command: list[str]) -> list[str]:
    return [TASKSET, "-c", cores, *command] if TASKSET else command


def _wait_listening(port: int, process: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port}")


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found.extend([int(child), *_children(int(child))])
    return found


def _tree_peak_rss_mb(pid: int) -> float:
    """The server's peak RSS plus its child processes' (decode workers, multiprocessing's tracker)."""
    total = _peak_rss_mb(pid)
    for child in _children(pid):
        with contextlib.suppress(FileNotFoundError):  # it ended meanwhile
            total += _peak_rss_mb(child)
    return total


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


def _loadgen(args: list[str]) -> dict[str, Any]:
    output = subprocess.run(
        _pinned(LOADGEN_CORES, [sys.executable, "-m", "bench.loadgen", *args]),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(output.stdout)


class Tracescore:
    def __init__(self, workdir: Path, extra: list[str]) -> None:
        self.db = workdir / "bench.duckdb"
        self.grpc, self.http = _free_port(), _free_port()
        command = [
            sys.executable,
            "-m",
            "collector.cli",
            "serve",
            "--db",
            str(self.db),
            "--grpc",
            f"127.0.0.1:{self.grpc}",
            "--http",
            f"127.0.0.1:{self.http}",
            *extra,
        ]
        self.log = (workdir / "serve.log").open("w")
        self.process = subprocess.Popen(
            _pinned(SERVER_CORES, command), cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT
        )
        _wait_listening(self.grpc, self.process)
        _wait_listening(self.http, self.process)
        self._wait_workers()

    def _wait_workers(self, timeout_s: float = 60.0) -> None:
        """Until the decode workers take requests (they start in the background)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            samples = self.metrics()
            if (
                samples.get("tracescore_decode_workers") == "0"
                or samples.get("tracescore_decode_workers_ready") == "1"
            ):
                return
            time.sleep(0.1)
        raise TimeoutError("decode workers did not start")

    def metrics(self) -> dict[str, str]:
        """The server's /metrics samples, by name (with labels) as written."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/metrics", timeout=10) as response:
            lines = response.read().decode().splitlines()
        return dict(line.rsplit(" ", 1) for line in lines if line[:1] != "#")

    def stop(self) -> float:
        rss = _tree_peak_rss_mb(self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(300)
        return rss

    def count(self, table: str) -> int:
        with duckdb.connect(str(self.db), read_only=True) as connection:
            return int(connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]


def bench_tracescore(traces: int, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        server = Tracescore(Path(tmp), ["--grace-seconds", "2"])
        full = _loadgen(
            [
                "--grpc",
                f"127.0.0.1:{server.grpc}",
                "--traces",
                str(traces),
                "--concurrency",
                str(concurrency),
                "--seed",
                "1",
            ]
        )
        half_rate = full["spans_per_s"] / 2
        half = _loadgen(
            [
                "--grpc",
                f"127.0.0.1:{server.grpc}",
                "--traces",
                str(traces // 2),
                "--concurrency",
                str(concurrency),
                "--spans-per-second",
                f"{half_rate:.0f}",
                "--seed",
                "2",
            ]
        )
        rss = server.stop()
        stored = server.count("spans")
        executions = server.count("executions")
    sent = full["spans"] + half["spans"]
    return {
        "spans_sent": sent,
        "spans_stored": stored,
        "executions_stored": executions,
        "ingest_spans_per_s": full["spans_per_s"],
        "ack_p50_ms_full": 1000 * _percentile(full["latencies_s"], 0.5),
        "ack_p99_ms_full": 1000 * _percentile(full["latencies_s"], 0.99),
        "half_rate_spans_per_s": half["spans_per_s"],
        "ack_p50_ms_half": 1000 * _percentile(half["latencies_s"], 0.5),
        "ack_p99_ms_half": 1000 * _percentile(half["latencies_s"], 0.99),
        "peak_rss_mb": rss,
    }


SPEC = "name: bench\nexpected_tools: [lookup_shipping_cutoff]\nallow_additional: true\n"


def _checkpoints(server: Tracescore) -> dict[str, float]:
    """The server's timed checkpoints so far: each one holds every commit, so it shows in the lag's tail."""
    samples = server.metrics()
    return {
        "checkpoints": float(samples.get("tracescore_checkpoints_total", "nan")),
        "checkpoint_seconds": float(samples.get("tracescore_checkpoint_seconds_total", "nan")),
    }


def commits_during_checkpoints(server: Tracescore) -> dict[str, float]:
    """Issue 17's figure (target < 50 ms): the longest of the server's writer transactions (span batches,
    run completions, begin to commit) that overlapped a checkpoint so far, and how many did."""
    samples = server.metrics()
    return {
        "commits_during_checkpoints": float(
            samples.get("tracescore_commits_during_checkpoints_total", "nan")
        ),
        "longest_commit_during_checkpoint_ms": 1000
        * float(samples.get("tracescore_longest_commit_during_checkpoint_seconds", "nan")),
    }


def bench_verdict_lag(
    tool_spans_per_s: float, seconds: float, grace_s: float, concurrency: int
) -> dict[str, Any]:
    spans_per_s = tool_spans_per_s * 6 / 3  # the workload has 3 tool spans in every 6
    traces = int(spans_per_s * seconds / 6)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(SPEC)
        server = Tracescore(Path(tmp), ["--grace-seconds", str(grace_s), "--specs", str(spec)])
        watch = f"http://127.0.0.1:{server.http}/api/v1/verdicts/watch"
        result = _loadgen(
            [
                "--grpc",
                f"127.0.0.1:{server.grpc}",
                "--traces",
                str(traces),
                "--concurrency",
                str(concurrency),
                "--spans-per-second",
                f"{spans_per_s:.0f}",
                "--watch",
                watch,
                "--seed",
                "3",
            ]
        )
        checkpoints = _checkpoints(server) | commits_during_checkpoints(server)
        rss = server.stop()
    lags = result["verdict_lag_s"]
    from_ack = result["verdict_lag_from_ack_s"]
    return {
        "tool_spans_per_s_offered": tool_spans_per_s,
        "seconds": seconds,
        **checkpoints,
        "tool_spans_per_s_achieved": result["tool_spans"] / result["elapsed_s"],
        "runs": traces,
        "verdicts_seen": result["verdicts"],
        "grace_s": grace_s,
        "exporters": concurrency,
        "verdict_lag_p50_ms": 1000 * _percentile(lags, 0.5),
        "verdict_lag_p99_ms": 1000 * _percentile(lags, 0.99),
        "verdict_lag_from_ack_p50_ms": 1000 * _percentile(from_ack, 0.5),
        "verdict_lag_from_ack_p99_ms": 1000 * _percentile(from_ack, 0.99),
        "peak_rss_mb": rss,
    }


def bench_phoenix(traces: int, venv: Path) -> dict[str, Any] | None:
    phoenix = venv / "bin" / "phoenix"
    if not phoenix.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        grpc_port, http_port = _free_port(), _free_port()
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": tmp,
            "PHOENIX_PORT": str(http_port),
            "PHOENIX_GRPC_PORT": str(grpc_port),
            "PHOENIX_HOST": "127.0.0.1",
        }
        log = (Path(tmp) / "phoenix.log").open("w")
        process = subprocess.Popen(
            _pinned(SERVER_CORES, [str(phoenix), "serve"]), env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            _wait_listening(grpc_port, process, timeout_s=180)
            started = time.monotonic()
            sent = _loadgen(
                [
                    "--grpc",
                    f"127.0.0.1:{grpc_port}",
                    "--traces",
                    str(traces),
                    "--concurrency",
                    "4",
                    "--seed",
                    "4",
                ]
            )
            database = Path(tmp) / "phoenix.db"
            stored, deadline = 0, time.monotonic() + 1800
            while time.monotonic() < deadline:
                try:
                    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as connection:
                        stored = connection.execute("SELECT count(*) FROM spans").fetchone()[0]
                except sqlite3.Error:
                    stored = 0
                if stored >= sent["spans"]:
                    break
                time.sleep(0.5)
            elapsed = time.monotonic() - started
            rss = _tree_peak_rss_mb(process.pid)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
    return {
        "spans_sent": sent["spans"],
        "spans_stored": stored,
        "acknowledged_spans_per_s": sent["spans_per_s"],
        "stored_spans_per_s": stored / elapsed,
        "peak_rss_mb": rss,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--traces", type=int, default=20_000, help="agent runs in the main load (6 spans each)"
    )
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--lag-tool-spans-per-s",
        default="1000,2500,5000",
        help="offered rates for the verdict-lag runs (comma-separated; the target is at 5000)",
    )
    parser.add_argument("--lag-seconds", type=float, default=20)
    parser.add_argument(
        "--sustained-lag",
        default="1000:75",
        help="RATE:SECONDS of one longer verdict-lag run, long enough to contain the timed checkpoint "
        "(every 60 s); empty to skip",
    )
    parser.add_argument(
        "--lag-concurrency",
        type=int,
        default=8,
        help="exporters in the verdict-lag runs: each has one 512-span request in flight, so 4 cannot "
        "offer 10 k spans/s once an answer takes over 200 ms",
    )
    parser.add_argument("--phoenix-traces", type=int, default=1000)
    parser.add_argument("--history-sizes", default="1000,100000,1000000")
    parser.add_argument("--batch-executions", type=int, default=1_000_000)
    parser.add_argument(
        "--phoenix-venv", type=Path, default=Path(os.environ.get("PHOENIX_VENV", ROOT / ".venv-phoenix"))
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ingest.json")
    args = parser.parse_args()

    workload = build(args.traces, seed=1)
    print(
        f"workload: {args.traces} agent runs, {workload.spans} spans ({workload.tool_spans} tool spans) "
        f"in {len(workload.requests)} requests of 512",
        flush=True,
    )
    limit_result = limit.measure(workload.requests)
    print(
        f"limit (parse + execution columns + one Arrow insert and commit per request): "
        f"{limit_result['spans_per_s']:,.0f} spans/s",
        flush=True,
    )
    ours = bench_tracescore(args.traces, args.concurrency)
    print(f"tracescore: {ours['ingest_spans_per_s']:,.0f} spans/s acknowledged = committed", flush=True)
    lags = []
    runs = [(float(r), args.lag_seconds) for r in args.lag_tool_spans_per_s.split(",")]
    if args.sustained_lag:
        rate_text, seconds_text = args.sustained_lag.split(":")
        runs.append((float(rate_text), float(seconds_text)))
    for rate, seconds in runs:
        lag = bench_verdict_lag(rate, seconds, grace_s=0.5, concurrency=args.lag_concurrency)
        lags.append(lag)
        print(
            f"verdict lag over {seconds:.0f} s offered {rate:,.0f}, achieved "
            f"{lag['tool_spans_per_s_achieved']:,.0f} tool spans/s: "
            f"p50 {lag['verdict_lag_p50_ms']:.0f} ms, p99 {lag['verdict_lag_p99_ms']:.0f} ms from sending "
            f"(p50 {lag['verdict_lag_from_ack_p50_ms']:.0f}, "
            f"p99 {lag['verdict_lag_from_ack_p99_ms']:.0f} from the acknowledgement)",
            flush=True,
        )
    phoenix = bench_phoenix(args.phoenix_traces, args.phoenix_venv)
    print("scoring one run against growing histories:", flush=True)
    history = score_history.measure([int(s) for s in args.history_sizes.split(",")])
    print(f"batch scoring over {args.batch_executions:,} stored executions ...", flush=True)
    batch = score_batch.measure(args.batch_executions)
    print("scoring the same runs with 1 spec and with 1,000 specs ...", flush=True)
    specs = score_specs.measure()

    rows = [
        ("limit: spans/s", f"{limit_result['spans_per_s']:,.0f}"),
        ("tracescore ingest over gRPC: spans/s (acked = committed)", f"{ours['ingest_spans_per_s']:,.0f}"),
        ("  fraction of the limit", f"{ours['ingest_spans_per_s'] / limit_result['spans_per_s']:.0%}"),
        ("  spans sent / stored", f"{ours['spans_sent']:,} / {ours['spans_stored']:,}"),
        (
            "  ack latency p50 / p99 at full rate (ms)",
            f"{ours['ack_p50_ms_full']:.1f} / {ours['ack_p99_ms_full']:.1f}",
        ),
        (
            f"  ack latency p50 / p99 at half rate, {ours['half_rate_spans_per_s']:,.0f} spans/s (ms)",
            f"{ours['ack_p50_ms_half']:.1f} / {ours['ack_p99_ms_half']:.1f}",
        ),
        ("  peak RSS, server + decode workers (MB)", f"{ours['peak_rss_mb']:.0f}"),
    ]
    for lag in lags:
        rows += [
            (
                f"verdict lag p50 / p99 from sending (ms), grace {lag['grace_s']} s, tool spans/s offered "
                f"{lag['tool_spans_per_s_offered']:,.0f}, achieved {lag['tool_spans_per_s_achieved']:,.0f}, "
                f"{lag['exporters']} exporters",
                f"{lag['verdict_lag_p50_ms']:.0f} / {lag['verdict_lag_p99_ms']:.0f}",
            ),
            (
                "  from the acknowledgement p50 / p99 (ms)",
                f"{lag['verdict_lag_from_ack_p50_ms']:.0f} / {lag['verdict_lag_from_ack_p99_ms']:.0f}",
            ),
            ("  verdicts seen / runs", f"{lag['verdicts_seen']} / {lag['runs']}"),
            (
                f"  over {lag['seconds']:.0f} s: timed checkpoints (every commit waits) / their seconds "
                "(DuckDB's own, at 256 MB of WAL, are not counted)",
                f"{lag['checkpoints']:.0f} / {lag['checkpoint_seconds']:.2f}",
            ),
            (
                "  longest commit during a checkpoint (ms; target < 50) / commits during checkpoints",
                f"{lag['longest_commit_during_checkpoint_ms']:.0f} / {lag['commits_during_checkpoints']:.0f}",
            ),
        ]
    if phoenix:
        rows += [
            (
                "Arize Phoenix: stored spans/s (until its DB held every span)",
                f"{phoenix['stored_spans_per_s']:,.0f}",
            ),
            ("  Phoenix acknowledged spans/s", f"{phoenix['acknowledged_spans_per_s']:,.0f}"),
            (
                "  tracescore / Phoenix (stored)",
                f"{ours['ingest_spans_per_s'] / phoenix['stored_spans_per_s']:.0f}x",
            ),
            ("  Phoenix peak RSS (MB)", f"{phoenix['peak_rss_mb']:.0f}"),
        ]
    else:
        rows.append(("Arize Phoenix", f"not installed in {args.phoenix_venv}"))
    batch_rates = {r["path"]: r for r in batch["results"]}
    rows += [
        (
            f"batch scoring over {batch['executions']:,} stored executions: executions/s",
            "",
        ),
        *((f"  {path}", f"{r['executions_per_s']:,.0f}") for path, r in batch_rates.items()),
        ("  set-based / Python judge", f"{batch['set_based_vs_python']}x"),
        (
            f"{specs['specs']:,} specs (a task each) vs 1 (every run), {specs['runs']:,} runs: time ratio",
            "",
        ),
        *((f"  {r['path']}", f"{r['ratio']:.2f}x") for r in specs["results"]),
        ("scoring one run, p50 / p99 (ms), by history size", ""),
        *(
            (
                f"  {h['history_runs']:,} runs ({h['executions']:,} executions)",
                f"{h['score_one_run_p50_ms']:.1f} / {h['score_one_run_p99_ms']:.1f}",
            )
            for h in history
        ),
        (
            "  largest / smallest history, p50",
            f"{history[-1]['score_one_run_p50_ms'] / history[0]['score_one_run_p50_ms']:.2f}x",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    ours.pop("latencies_s", None)
    args.out.write_text(
        json.dumps(
            {
                "limit": limit_result,
                "tracescore": ours,
                "verdict_lag": lags,
                "phoenix": phoenix,
                "batch_scoring": batch,
                "specs_ratio": specs,
                "score_one_run_by_history": history,
            },
            indent=2,
        )
    )
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()

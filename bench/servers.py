"""The servers the benchmarks measure, run as users run them: `tracescore serve` on loopback ports with
its default settings (no `TRACESCORE_*` variable from the caller's environment reaches it), what its
`/metrics` says, and the peak RSS of a process with its children (/proc).

The servers may use both cores, as on a real 2-core host (tracescore's decode workers are processes of
their own); the load generator is pinned to core 1 and competes for it (it used 6-8 % of a core at
10 k spans/s offered).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import duckdb

ROOT = Path(__file__).resolve().parent.parent
TASKSET = shutil.which("taskset")
SERVER_CORES = "0,1"
LOADGEN_CORES = "1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cores: str, command: list[str]) -> list[str]:
    return [TASKSET, "-c", cores, *command] if TASKSET else command


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
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


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found.extend([int(child), *children(int(child))])
    return found


def tree_peak_rss_mb(pid: int) -> float:
    """A process's peak RSS plus its children's (decode workers, multiprocessing's tracker): the sum of
    each one's peak, so at most what they held together at any moment's worst."""
    total = _peak_rss_mb(pid)
    for child in children(pid):
        with contextlib.suppress(FileNotFoundError):  # it ended meanwhile
            total += _peak_rss_mb(child)
    return total


def loadgen(args: list[str], timeout_s: float = 1800) -> dict[str, Any]:
    """Runs bench/loadgen.py pinned to the load generator's core; its JSON answer."""
    output = subprocess.run(
        pinned(LOADGEN_CORES, [sys.executable, "-m", "bench.loadgen", *args]),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout_s,
    )
    result: dict[str, Any] = json.loads(output.stdout)
    if result.get("exporters_failed"):
        print(
            f"WARNING: {result['exporters_failed']} exporter(s) stopped on an error, "
            f"{result['requests']:,} of {result['requests_planned']:,} requests sent: "
            f"{result['first_failure']}",
            flush=True,
        )
    return result


def parse_metrics(text: str) -> dict[str, str]:
    """Prometheus text samples by name (with labels) as written; comments dropped."""
    samples = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = value
    return samples


def longest_commit_during_checkpoint_ms(samples: dict[str, str]) -> float | None:
    """The longest a commit took while a checkpoint ran, from a server metric whose name holds both
    `commit` and `checkpoint` (a gauge, or the top quantile of a summary); None when the server has
    none. Counters (`_total`, `_count`), sums and histogram buckets are not durations of one commit;
    the unit is seconds, Prometheus's base unit, unless the name says milliseconds."""
    values: list[float] = []
    for sample, text in samples.items():
        name = sample.partition("{")[0]
        if "commit" not in name or "checkpoint" not in name:
            continue
        if name.endswith(("_total", "_count", "_sum", "_bucket", "_created")):
            continue
        try:
            value = float(text)
        except ValueError:
            continue
        milliseconds = name.endswith("_ms") or "millisecond" in name
        values.append(value if milliseconds else value * 1000)
    return max(values) if values else None


def default_environment() -> dict[str, str]:
    """This process's environment without any TRACESCORE_* setting, so `serve` runs its defaults."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TRACESCORE_")}


class Tracescore:
    """`tracescore serve` on free loopback ports over a new database in `workdir`, with `extra` flags
    (none: the default settings). Its decode workers start with a first request: an empty one is sent
    and the workers awaited, so that a load measures a server that has been taking requests, unless
    `idle` (a server that has received nothing). `preexec` runs in the child before it execs (taskset,
    which execs the server): bench/cgroup.py's move into a memory cgroup."""

    def __init__(
        self,
        workdir: Path,
        extra: list[str],
        idle: bool = False,
        preexec: Callable[[], None] | None = None,
    ) -> None:
        self.db = workdir / "bench.duckdb"
        self.grpc, self.http = free_port(), free_port()
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
        self.log: IO[str] = (workdir / "serve.log").open("w")
        self.process = subprocess.Popen(
            pinned(SERVER_CORES, command),
            cwd=ROOT,
            env=default_environment(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            # Safe with threads here: bench/cgroup.py's preexec only calls os.open/os.write (no lock).
            preexec_fn=preexec,  # noqa: PLW1509
        )
        wait_listening(self.grpc, self.process)
        wait_listening(self.http, self.process)
        if not idle:
            self._wait_workers()

    def _wait_workers(self, timeout_s: float = 60.0) -> None:
        """Until the decode workers take requests (they start in the background, with a first request)."""
        empty = urllib.request.Request(
            f"http://127.0.0.1:{self.http}/v1/traces",
            b'{"resourceSpans": []}',
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(empty, timeout=10) as response:
            response.read()
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
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/metrics", timeout=10) as response:
            return parse_metrics(response.read().decode())

    def checkpoints(self) -> dict[str, float | None]:
        """The checkpoints so far and the longest commit during one (None: no such metric)."""
        samples = self.metrics()
        return {
            "checkpoints": float(samples.get("tracescore_checkpoints_total", "nan")),
            "checkpoint_seconds": float(samples.get("tracescore_checkpoint_seconds_total", "nan")),
            "longest_commit_during_checkpoint_ms": longest_commit_during_checkpoint_ms(samples),
        }

    def verdict_lag_split(self) -> dict[str, float | None]:
        """The server's own share of the verdict lag over its most recent runs, in ms: from a run's
        completion to its verdict handed to watchers and the export, and to its verdict stored (None:
        the server has no such metric)."""
        samples = self.metrics()
        figures: dict[str, float | None] = {}
        for key, metric in (
            ("delivered", "tracescore_verdict_lag_seconds"),
            ("stored", "tracescore_scoring_lag_seconds"),
        ):
            for quantile, name in (("0.5", "p50"), ("0.99", "p99")):
                value = samples.get(f'{metric}{{quantile="{quantile}"}}')
                figures[f"completion_to_{key}_{name}_ms"] = 1000 * float(value) if value else None
        return figures

    def peak_rss_mb(self) -> float:
        return tree_peak_rss_mb(self.process.pid)

    def stop(self) -> float:
        """Stops the server (SIGTERM, as a pod is stopped; killed if it has not ended in 5 minutes);
        its peak RSS until then."""
        if self.process.poll() is not None:
            return float("nan")
        rss = self.peak_rss_mb()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(300)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        return rss

    def __enter__(self) -> Tracescore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Stopped even when a measurement failed: no server outlives its step."""
        self.stop()

    def count(self, table: str) -> int:
        with duckdb.connect(str(self.db), read_only=True) as connection:
            row = connection.execute(f"SELECT count(*) FROM {table}").fetchone()
        return int(row[0]) if row else 0

"""Arize Phoenix, the peer, on the same workload over OTLP/gRPC: the rate until its database holds
every span (it acknowledges before it stores). `make bench` installs it into its own virtualenv
($PHOENIX_VENV, default .venv-phoenix): its dependencies must not shape ours."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.servers import SERVER_CORES, free_port, loadgen, pinned, tree_peak_rss_mb, wait_listening


def _stored(database: Path) -> int:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as connection:
            return int(connection.execute("SELECT count(*) FROM spans").fetchone()[0])
    except sqlite3.Error:
        return 0


def measure(traces: int, venv: Path) -> dict[str, Any] | None:
    """None when Phoenix is not installed in `venv`."""
    phoenix = venv / "bin" / "phoenix"
    if not phoenix.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        grpc_port, http_port = free_port(), free_port()
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": tmp,
            "PHOENIX_PORT": str(http_port),
            "PHOENIX_GRPC_PORT": str(grpc_port),
            "PHOENIX_HOST": "127.0.0.1",
        }
        with (Path(tmp) / "phoenix.log").open("w") as log:
            process = subprocess.Popen(
                pinned(SERVER_CORES, [str(phoenix), "serve"]), env=env, stdout=log, stderr=subprocess.STDOUT
            )
            try:
                wait_listening(grpc_port, process, timeout_s=180)
                started = time.monotonic()
                common = ["--traces", str(traces), "--concurrency", "4", "--seed", "4"]
                sent = loadgen(["--grpc", f"127.0.0.1:{grpc_port}", *common])
                database = Path(tmp) / "phoenix.db"
                stored, deadline = 0, time.monotonic() + 1800
                while time.monotonic() < deadline:
                    stored = _stored(database)
                    if stored >= sent["spans"]:
                        break
                    time.sleep(0.5)
                elapsed = time.monotonic() - started
                rss = tree_peak_rss_mb(process.pid)
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

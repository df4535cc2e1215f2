"""Conversation verdict lag (issue 21): from the last turn's completion to the stored conversation
verdict, online, through the real OTLP exporter and a real `tracescore serve`.

Runs the demo's BFCL-style conversation (collector/cli/_demo_conversation.py) N times, half with the
last turn marked (`tracescore.turn.last`: judged at once) and half without (judged after the grace
period, 0.3 s here), then reads `verdicts.scored_at - conversations.completed_at` from the file. The
target: grace + 250 ms. Prints a table; not part of the test suite.

    .venv/bin/python -m bench.conversation_lag [--conversations 40]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from collector.cli._demo_conversation import GOOD, SPECS, run_conversation

GRACE_S = 0.3


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=40)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp())
    specs, db = directory / "specs.yaml", directory / "lag.duckdb"
    specs.write_text(SPECS)
    grpc_port, http_port = _port(), _port()
    server = subprocess.Popen(
        [sys.executable, "-m", "collector.cli", "serve", "--db", str(db), "--grpc", f"127.0.0.1:{grpc_port}",
         "--http", f"127.0.0.1:{http_port}", "--grace-seconds", str(GRACE_S), "--specs", str(specs)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", grpc_port)) == 0:
                    break
            time.sleep(0.05)
        provider = TracerProvider(resource=Resource.create({"service.name": "bench-conversations"}))
        provider.add_span_processor(
            BatchSpanProcessor(
                OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True), schedule_delay_millis=50
            )
        )
        tracer = provider.get_tracer("bench.conversations")
        for i in range(args.conversations):
            run_conversation(tracer, dataclasses.replace(GOOD, mark_last=i % 2 == 0))
            provider.force_flush()
            time.sleep(0.1)
        provider.shutdown()
        time.sleep(GRACE_S * 2 + 2)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    with duckdb.connect(str(db), read_only=True) as connection:
        rows = connection.execute(
            "SELECT c.last_turn_marked, epoch_ms(v.scored_at) - epoch_ms(c.completed_at) "
            "FROM verdicts v JOIN conversations c USING (conversation_id)"
        ).fetchall()
    print(f"{len(rows)} conversation verdicts of {args.conversations} conversations (4 turns each)")
    print(f"{'last turn':<12} {'n':>3} {'p50 ms':>8} {'max ms':>8}  target ms")
    for marked in (True, False):
        lags = sorted(lag for m, lag in rows if m is marked)
        if lags:
            target = 250 if marked else GRACE_S * 1000 + 250
            name, p50 = ("marked" if marked else "not marked"), statistics.median(lags)
            print(f"{name:<12} {len(lags):>3} {p50:>8.0f} {lags[-1]:>8.0f}  <= {target:.0f}")


if __name__ == "__main__":
    main()

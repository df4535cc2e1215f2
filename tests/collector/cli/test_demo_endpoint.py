"""`tracescore demo --endpoint URL` (issue 28): the demo agent's runs sent to one's own `serve`, over
OTLP/HTTP or gRPC through the real exporter, and scored there with the specs the demo writes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._server import ServeProcess


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=cwd,
    )


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_the_demo_agent_sends_to_a_running_serve(tmp_path: Path, protocol: str) -> None:
    server = ServeProcess(db=tmp_path / "mine.duckdb").start()
    try:
        port = server.http_port if protocol == "http/protobuf" else server.grpc_port
        sent = _cli("demo", "--endpoint", f"http://127.0.0.1:{port}", "--protocol", protocol, cwd=tmp_path)
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout.count("agent run ") == 10 and "sent 14 runs" in sent.stdout
        time.sleep(1.0)  # complete a grace period (0.3 s) after the last span
    finally:
        assert server.stop() == 0, server.log()
    specs = tmp_path / "tracescore-demo-specs.yaml"
    assert specs.exists()
    assert len(server.query("SELECT run_id FROM runs")) == 14  # ten shop runs, four conversation turns
    scored = _cli("score", "--db", str(server.db), "--spec", str(specs), "--format", "json", cwd=tmp_path)
    verdicts = json.loads(scored.stdout)
    shop = [v for v in verdicts if v["spec"] in ("same-day-dispatch", "stock-check", "refund")]
    assert len(shop) == 10 and sum(v["label"] == "pass" for v in shop) == 4  # as `tracescore demo` shows


def test_nothing_listening_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from tests._server import free_port

    refused = _cli("demo", "--endpoint", f"http://127.0.0.1:{free_port()}", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.startswith("tracescore: nothing answers at http://127.0.0.1:")
    assert len(refused.stderr.strip().splitlines()) == 1

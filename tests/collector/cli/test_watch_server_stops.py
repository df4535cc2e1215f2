"""`tracescore watch` when the server stops under it (issue 28): it used to exit with no message; now
it says the server closed the stream and exits 69 (docs/online.md), which a CI gate tells from a
failed run (1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from collector.cli._demo_agent import ROLLOUTS, run_agent
from tests._otel import provider
from tests._server import ServeProcess


def test_watch_says_the_server_closed_the_stream_and_exits_69(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: stock\nexpected_tools: [check_stock]\n")
    server = ServeProcess(db=tmp_path / "traces.duckdb", extra_args=("--specs", str(spec))).start()
    try:
        watch = subprocess.Popen(
            [sys.executable, "-m", "collector.cli", "watch", "--db", str(server.db), "--existing"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        tracer_provider = provider(server)
        run_agent(tracer_provider.get_tracer("test"), next(r for r in ROLLOUTS if r.task == "stock-check"))
        tracer_provider.shutdown()
        assert watch.stdout is not None
        first = watch.stdout.readline()  # blocks until the verdict arrives
        assert first.startswith("PASS  stock"), first
        assert server.stop() == 0
        out, err = watch.communicate(timeout=30)
    finally:
        server.kill()
    assert watch.returncode == 69, (out, err)
    assert err.strip() == (
        f"tracescore: the server at http://127.0.0.1:{server.http_port} closed the stream "
        "(it stopped or restarted) after 1 verdict(s)"
    )

"""A verdict is delivered before it is stored, so a crash in between delivers it again: at least once.

End to end: agent runs sent by the real SDK exporter to `tracescore serve`, a `tracescore watch`
connected. The server holds storing back (the test-only TRACESCORE_TEST_VERDICT_STORE_DELAY_S, see
collector/serve/_verdict_store.py), so the SIGKILL lands, deterministically, after the watcher got every
verdict and before any was stored. After a restart the catch-up judges the runs again: a watcher gets
the same verdicts under the same keys (run, run version, spec fingerprint), each is stored exactly
once, none is lost.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from collector.serve._verdict_store import TEST_DELAY_ENV
from tests._otel import provider
from tests._server import ServeProcess
from tests.collector.serve.test_online import TOOL, WAIT_S, Agent, new_run_id, prometheus, wait_for, watchers

SPECS = f"name: uses-cutoff\nexpected_tools: [{TOOL}]\n---\nname: strict-north\nexpected_tools: [{TOOL}]\n"
RUNS = 3
WATCH = (sys.executable, "-m", "collector.cli", "watch", "--format", "json")
VERDICTS = RUNS * 2


def _watch(db: Path, *extra: str) -> subprocess.Popen[str]:
    """`tracescore watch` for this many verdicts, printed as JSON."""
    return subprocess.Popen(
        [*WATCH, "--db", str(db), "--count", str(VERDICTS), "--timeout", str(WAIT_S), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _printed(watcher: subprocess.Popen[str]) -> list[dict[str, Any]]:
    try:
        out, err = watcher.communicate(timeout=WAIT_S + 10)
    finally:
        watcher.kill()
    assert watcher.returncode == 0, err  # every verdict came, and each passed
    return [json.loads(line) for line in out.splitlines()]


def _keys(verdicts: list[dict[str, Any]]) -> list[tuple[str, str, int, str]]:
    return sorted((v["run_id"], v["spec"], v["run_version"], v["spec_fingerprint"]) for v in verdicts)


def _content(verdicts: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    return {
        (v["run_id"], v["spec"], v["run_version"]): {k: x for k, x in v.items() if k != "scored_at"}
        for v in verdicts
    }


def test_verdicts_delivered_but_not_stored_at_a_sigkill_are_delivered_again_and_stored_once(
    tmp_path: Path,
) -> None:
    (tmp_path / "specs.yaml").write_text(SPECS)
    db = tmp_path / "killed.duckdb"
    args = ("--specs", str(tmp_path / "specs.yaml"))
    server = ServeProcess(db, extra_args=args, env={TEST_DELAY_ENV: "600"}).start()
    task = f"at-least-once:{uuid.uuid4().hex[:8]}"
    run_ids = [new_run_id() for _ in range(RUNS)]
    try:
        watcher = _watch(db)
        wait_for(lambda: watchers(server) >= 1, "the watcher subscribed", server)
        tracer_provider = provider(server, "grpc")
        try:
            agent = Agent(tracer_provider)
            for run_id in run_ids:
                agent.run(task, [(TOOL, {"region": "north"})], run_id=run_id)
        finally:
            tracer_provider.shutdown()
        delivered = _printed(watcher)
        assert {v["run_id"] for v in delivered} == set(run_ids)
        # Delivered, not stored: /metrics says so, and a watcher asking for what exists gets them all
        # the same (the hub keeps them until their store commits).
        assert prometheus(server, "tracescore_verdicts_unstored") == VERDICTS
        assert _keys(_printed(_watch(db, "--existing"))) == _keys(delivered)
    finally:
        server.kill()  # SIGKILL while storing is held back
    # The crash landed where it should: complete runs, no verdict stored (else this proves nothing).
    rows = server.query("SELECT run_id, status FROM runs WHERE task_id = ?", [task])
    assert sorted(rows) == sorted((r, "complete") for r in run_ids)
    assert server.query("SELECT count(*) FROM verdicts") == [(0,)]

    restarted = ServeProcess(db, extra_args=args, log_path=tmp_path / "restarted.log").start()
    try:
        # --existing: the catch-up may judge them before a watcher can subscribe.
        again = _printed(_watch(db, "--existing"))
        assert f"{RUNS} run(s) completed before this start have no verdict" in restarted.log()
        assert restarted.stop() == 0, restarted.log()
    finally:
        restarted.kill()
    assert _keys(again) == _keys(delivered)  # the same keys: a consumer dedupes on them
    assert _content(again) == _content(delivered)  # and the same verdicts
    stored = restarted.query(
        "SELECT run_id, spec, run_version, spec_fingerprint FROM verdicts WHERE task_id = ?", [task]
    )
    assert sorted(stored) == _keys(delivered)  # each stored exactly once, none lost

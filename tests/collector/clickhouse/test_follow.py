"""`tracescore score --clickhouse … --follow` survives a SIGKILL: restarted, it resumes from the
watermark it keeps in ClickHouse, and every run ends up with exactly one stored verdict per spec (none
missing, none twice, even before ClickHouse merges parts)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.collector.clickhouse._chdb_tool import query
from tests.collector.clickhouse._corpus import framework_requests, framework_specs, load_clickhouse

Key = tuple[str, str]


def _command(url: str, specs: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "collector.cli", "score", "--clickhouse", url, "--spec", str(specs), *extra]


class Follower:
    """A running `--follow`, its verdict lines read by a thread (select on a buffered pipe misses lines
    already read into the buffer)."""

    def __init__(self, url: str, specs: Path, *extra: str) -> None:
        args = ("--follow", "--batch-traces", "3", "--settle-seconds", "1", "--poll-seconds", "0.1", *extra)
        self.process = subprocess.Popen(
            _command(url, specs, *args, "--format", "json"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def drain(self, seen: list[Key], contents: dict[Key, Any]) -> None:
        """Once the process is gone, the lines it printed that were not read yet: a process killed after
        the reading stopped may have printed (and moved its watermark past) a batch more."""
        self._reader.join(30)
        while not self.lines.empty():
            self._take(self.lines.get(), seen, contents)

    @staticmethod
    def _take(line: str, seen: list[Key], contents: dict[Key, Any]) -> None:
        if line.strip():
            verdict = json.loads(line)
            seen.append((verdict["run_id"], verdict["spec"]))
            contents[seen[-1]] = verdict

    def read_until(
        self, seen: list[Key], enough: int, contents: dict[Key, Any], timeout_s: float = 180
    ) -> None:
        """Verdict lines until `enough` are seen in all."""
        deadline = time.monotonic() + timeout_s
        while len(seen) < enough:
            assert time.monotonic() < deadline, f"only {len(seen)} verdicts within {timeout_s} s"
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                assert self.process.poll() is None, self.process.stderr.read() if self.process.stderr else ""
                continue
            self._take(line, seen, contents)


@pytest.mark.timeout(600)
def test_follow_resumes_after_sigkill_without_gaps_or_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "clickhouse"
    load_clickhouse(path, [json.loads(line) for line in framework_requests()])
    specs = tmp_path / "specs.yaml"
    specs.write_text(framework_specs())
    url = f"chdb:{path}"
    once = subprocess.run(
        _command(url, specs, "--format", "json"),
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert once.returncode in (0, 1), once.stderr
    at_once = {(v["run_id"], v["spec"]): v for v in json.loads(once.stdout)}
    expected = set(at_once)
    assert len(expected) > 30

    seen: list[Key] = []
    contents: dict[Key, Any] = {}
    first = Follower(url, specs)
    try:
        first.read_until(seen, len(expected) // 3, contents)
    finally:
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait(30)
    first.drain(seen, contents)
    killed_at = len(seen)
    second = Follower(url, specs)
    try:
        second.read_until(seen, killed_at + 1, contents)  # resumed
        while set(seen) < expected:
            second.read_until(seen, len(seen) + 1, contents)
    finally:
        second.process.send_signal(signal.SIGTERM)
        stderr = second.process.stderr.read() if second.process.stderr else ""
        assert second.process.wait(60) == 0, stderr
    assert set(seen) == expected
    assert contents == at_once  # batch by batch, the verdicts of scoring the whole window at once
    # What the killed process had stored but not printed was scored again and printed once more: that is
    # all the repetition there is, and nothing of it reached the table.
    assert len(seen) - len(expected) <= 3 * 3 * 2  # at most one batch (3 traces, a few runs and specs)

    stored = query(path, "SELECT run_id, scorer FROM otel.tracescore_verdicts")
    watermarks = query(path, "SELECT count() FROM otel.tracescore_watermarks FINAL")
    assert len(stored) == len(expected), "a verdict was stored twice (or not at all)"
    assert {(r[0], r[1]) for r in stored} == expected
    assert watermarks == [[1]]

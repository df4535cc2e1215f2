"""What a pod must hold for a server and its children, read from /proc by the tests themselves (not
through the server's code): everyone's private memory, and the library pages the server uses, at most
`HOT_FILE_BYTES` (the rest are clean pages the kernel drops before a container runs out,
docs/reliability.md). `HeldPeak` samples it while a load runs."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from collector.serve.memory import HOT_FILE_BYTES


def _kib(pid: int, *fields: str) -> int:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return sum(int(line.split()[1]) for line in lines if line.split(":")[0] in fields)


def tree_held_bytes(pid: int) -> int:
    total = 0
    with contextlib.suppress(OSError, ValueError):
        total = 1024 * _kib(pid, "RssAnon", "RssShmem") + min(1024 * _kib(pid, "RssFile"), HOT_FILE_BYTES)
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                with contextlib.suppress(OSError, ValueError):
                    total += 1024 * _kib(int(child), "RssAnon", "RssShmem")
    return total


class HeldPeak:
    """The largest `tree_held_bytes(pid)` seen every `every_s` while the `with` block runs."""

    def __init__(self, pid: int, every_s: float = 0.02) -> None:
        self.pid, self.every_s, self.bytes = pid, every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.bytes = max(self.bytes, tree_held_bytes(self.pid))

    def __enter__(self) -> HeldPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

"""One memory budget for the sidecar: where it comes from, how it is shared, and when it is spent.

The budget is `--memory-limit` (TRACESCORE_MEMORY_LIMIT), else the container's own limit (cgroup v2
`memory.max`, v1 `memory.limit_in_bytes`), as the OpenTelemetry Collector's `memory_limiter` reads it;
without either there is no budget and nothing below applies. Within it (issue 17):

- DuckDB gets `DUCKDB_SHARE` of it as its `memory_limit` (its buffer pool: it spills to disk beyond);
- decode worker processes run only when the budget holds them beside the server (`WORKER_BYTES` each
  over `SERVER_BYTES`, measured in bench/README.md), else decoding runs in the server's process;
- above `REFUSE_AT` of it (the resident memory of the server and its workers, read from /proc) every
  new OTLP request is refused with a retryable answer (HTTP 503 + Retry-After, gRPC UNAVAILABLE +
  RetryInfo) until memory falls back: the exporters retry, nothing acknowledged is lost, and the
  kernel's OOM killer never has to choose.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
DUCKDB_SHARE = 0.4
REFUSE_AT = 0.9
SERVER_BYTES = 160 * MIB  # the server's imports and an open DuckDB file, threads=1 (bench/README.md)
WORKER_BYTES = 60 * MIB  # one spawned decode worker
_CHECK_EVERY_S = 0.25
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?\s*", re.IGNORECASE)
# cgroup v1 reports "no limit" as a huge number (PAGE_COUNTER_MAX pages): anything past this is none.
_NO_LIMIT = 1 << 60


def parse_size(text: str) -> int:
    """`512MB`, `1.5GiB`, `268435456` in bytes (MB is 1000², MiB 1024², as DuckDB reads them)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size: write e.g. 512MB, 1GiB or a number of bytes")
    value = int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])
    if value <= 0:
        raise ValueError(f"{text!r}: a memory limit must be more than 0")
    return value


def container_limit(cgroup: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The memory limit of the container this process runs in, if it sets one."""
    for path in (cgroup / "memory.max", cgroup / "memory" / "memory.limit_in_bytes"):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text == "max":
            return None
        try:
            value = int(text)
        except ValueError:
            continue
        return value if 0 < value < _NO_LIMIT else None
    return None


def _resident_bytes(pid: str) -> int:
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def resident_bytes() -> int:
    """Resident memory of this process and its children (the decode workers), from /proc."""
    total = _resident_bytes("self")
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids = children.read_text().split()
        except OSError:
            continue
        total += sum(_resident_bytes(pid) for pid in pids)
    return total


@dataclass(frozen=True, slots=True)
class Budget:
    limit_bytes: int
    source: str  # "--memory-limit" or "container"

    @property
    def duckdb_bytes(self) -> int:
        return max(64 * MIB, int(self.limit_bytes * DUCKDB_SHARE))

    @property
    def refuse_above_bytes(self) -> int:
        return int(self.limit_bytes * REFUSE_AT)

    def workers_allowed(self, wanted: int) -> int:
        """How many of the wanted decode workers fit beside the server and DuckDB's share."""
        room = self.limit_bytes - SERVER_BYTES - self.duckdb_bytes
        return max(0, min(wanted, room // WORKER_BYTES))


def budget(memory_limit: str, cgroup: Path = Path("/sys/fs/cgroup")) -> Budget | None:
    if memory_limit:
        return Budget(parse_size(memory_limit), "--memory-limit")
    limit = container_limit(cgroup)
    return Budget(limit, "container") if limit is not None else None


class MemoryGuard:
    """Answers, cheaply and often, whether memory is over the budget's refusal mark now."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._checked_at = 0.0
        self._resident = 0
        self.refusals = 0

    def over(self) -> str | None:
        now = time.monotonic()
        if now - self._checked_at >= _CHECK_EVERY_S:
            self._resident = resident_bytes()
            self._checked_at = now
        if self._resident < self.budget.refuse_above_bytes:
            return None
        self.refusals += 1
        return (
            f"memory budget nearly spent ({self._resident // MIB} MiB resident of "
            f"{self.budget.limit_bytes // MIB} MiB, {self.budget.source}): retry shortly"
        )

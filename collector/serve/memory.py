"""One memory budget for the sidecar: where it comes from, how it is shared, and when it is spent.

The budget is `--memory-limit` (TRACESCORE_MEMORY_LIMIT), else the container's own limit (cgroup v2
`memory.max`, v1 `memory.limit_in_bytes`), as the OpenTelemetry Collector's `memory_limiter` reads it;
without either there is no budget, and the sizes below are those of a small sidecar (`DEFAULT_SIZES`)
with no refusals. Within a budget (issue 17):

- the server itself takes `SERVER_BYTES` (its libraries and an open file, resident when idle); of the
  rest DuckDB gets `DUCKDB_SHARE` as its `memory_limit` (its buffer pool: it spills to disk beyond),
  with one thread below `DUCKDB_ONE_THREAD_BELOW` (each thread keeps buffers of its own). Its share is
  of what is left, not of the whole: DuckDB keeps its buffers once filled, so a share that did not
  fit beside the server would keep memory over the refusal mark for good;
- the completed traces kept in memory for late and re-sent spans get `RETAINED_SHARE` of the rest,
  counted in bytes (estimated: collector/store/_tracker.py), not in spans;
- decode worker processes (`WORKER_BYTES` each) run only when they fit below the refusal mark beside
  all that and `WORKING_BYTES` for requests in flight and open traces, else decoding runs in the
  server's process (figures measured with bench/memory.py, in bench/README.md);
- above `REFUSE_AT` of it (the resident memory of the server and its workers, read from /proc) every
  new OTLP request is refused with a retryable answer (HTTP 503 + Retry-After, gRPC UNAVAILABLE +
  RetryInfo) until memory falls back: the exporters retry, nothing acknowledged is lost, and the
  kernel's OOM killer never has to choose.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
DUCKDB_SHARE = 0.4
# DuckDB's checkpoint pins blocks it cannot spill, beside the ART indexes and the rows not yet
# checkpointed: at 64 MiB a checkpoint under sustained load ran out ("failed to pin block") and DuckDB
# invalidated the database (measured with bench.run's half-rate step). Below this, no share is given.
DUCKDB_MIN_BYTES = 256 * MIB
DUCKDB_ONE_THREAD_BELOW = 1024 * MIB
RETAINED_SHARE = 0.1
RETAINED_MIN_BYTES = 4 * MIB
REFUSE_AT = 0.9
SERVER_BYTES = 200 * MIB  # resident when idle: imports, an open DuckDB file (bench/memory.py: 190 MB)
WORKER_BYTES = 96 * MIB  # one spawned decode worker, resident (bench/memory.py: 92 MB)
WORKING_BYTES = 64 * MIB  # requests in flight, open traces, Arrow batches being committed
_CHECK_EVERY_S = 0.25
_SHED_EVERY_S = 2.0  # each shedding requests a checkpoint: not more often than this
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


def resident_bytes(worker_pids: Iterable[int] = ()) -> int:
    """Resident memory of this process and of its decode workers (by pid), from /proc.

    Named workers only, not every child: a child just forked (by a plugin, or by a library that runs a
    helper program) shares the server's pages, and counted it doubles them (one sample summed 888 MiB
    for a 461 MiB server, issue 33), which refuses requests for memory nobody is using."""
    return _resident_bytes("self") + sum(_resident_bytes(str(pid)) for pid in worker_pids)


@dataclass(frozen=True, slots=True)
class Sizes:
    """What the budget (or, without one, the defaults) gives each part of the server."""

    duckdb_bytes: int
    duckdb_threads: int | None  # None: DuckDB's own default (one a core)
    retained_trace_bytes: int


# Without a budget: a sidecar's sizes (DuckDB's own default would be 80 % of the host's RAM). Measured
# at the bench's full rate (bench/memory.py, bench/README.md): peak RSS 847 MB before, 505 MB with
# DuckDB at 128 MiB and 32 MiB of retained traces, 441 MB with these.
DEFAULT_SIZES = Sizes(duckdb_bytes=DUCKDB_MIN_BYTES, duckdb_threads=None, retained_trace_bytes=16 * MIB)


@dataclass(frozen=True, slots=True)
class Budget:
    limit_bytes: int
    source: str  # "--memory-limit" or "container"

    @property
    def beyond_server_bytes(self) -> int:
        return max(0, self.limit_bytes - SERVER_BYTES)

    @property
    def duckdb_bytes(self) -> int:
        return max(DUCKDB_MIN_BYTES, int(self.beyond_server_bytes * DUCKDB_SHARE))

    @property
    def retained_trace_bytes(self) -> int:
        return max(RETAINED_MIN_BYTES, int(self.beyond_server_bytes * RETAINED_SHARE))

    @property
    def sizes(self) -> Sizes:
        return Sizes(
            duckdb_bytes=self.duckdb_bytes,
            duckdb_threads=1 if self.limit_bytes < DUCKDB_ONE_THREAD_BELOW else None,
            retained_trace_bytes=self.retained_trace_bytes,
        )

    @property
    def refuse_above_bytes(self) -> int:
        return int(self.limit_bytes * REFUSE_AT)

    def workers_allowed(self, wanted: int) -> int:
        """How many of the wanted decode workers fit below the refusal mark beside everything else."""
        room = (
            self.refuse_above_bytes
            - SERVER_BYTES
            - self.duckdb_bytes
            - self.retained_trace_bytes
            - WORKING_BYTES
        )
        return max(0, min(wanted, room // WORKER_BYTES))


def intake_bytes(budget: Budget, workers: int) -> int:
    """What OTLP requests in flight may hold at once (collector/receive/intake.py): the room the refusal
    mark leaves beside the server, DuckDB, the retained traces and the decode workers that run, and at
    least `WORKING_BYTES`, which the budget's shares set aside for them."""
    room = (
        budget.refuse_above_bytes
        - SERVER_BYTES
        - budget.duckdb_bytes
        - budget.retained_trace_bytes
        - workers * WORKER_BYTES
    )
    return max(WORKING_BYTES, room)


def sizes(budget: Budget | None) -> Sizes:
    return budget.sizes if budget is not None else DEFAULT_SIZES


# The least a budget must hold for the server to work under load without refusing for good: the server
# itself, DuckDB's floor, the retained traces' floor and the work in flight, below the refusal mark.
SMALLEST_WORKABLE_BYTES = int(
    (SERVER_BYTES + DUCKDB_MIN_BYTES + RETAINED_MIN_BYTES + WORKING_BYTES) / REFUSE_AT
)


def too_small(budget: Budget) -> str | None:
    """Why this budget cannot hold a server under load (it would refuse requests for good), or None."""
    if budget.limit_bytes >= SMALLEST_WORKABLE_BYTES:
        return None
    return (
        f"the memory budget ({budget.limit_bytes // MIB} MiB, {budget.source}) is below the "
        f"~{SMALLEST_WORKABLE_BYTES // MIB} MiB a server needs under load (itself ~{SERVER_BYTES // MIB}, "
        f"DuckDB at least {DUCKDB_MIN_BYTES // MIB}): expect requests refused for as long as the load lasts"
    )


def budget(memory_limit: str, cgroup: Path = Path("/sys/fs/cgroup")) -> Budget | None:
    if memory_limit:
        return Budget(parse_size(memory_limit), "--memory-limit")
    limit = container_limit(cgroup)
    return Budget(limit, "container") if limit is not None else None


class MemoryGuard:
    """Answers, cheaply and often, whether memory is over the budget's refusal mark now; when it is,
    asks for memory back (`shed`: the writer forgets retained traces, checkpoints, trims malloc), so
    that refusals end once what was let in is committed, rather than last as long as the allocators
    keep what they hold."""

    def __init__(
        self,
        budget: Budget,
        shed: Callable[[], None] | None = None,
        workers: Callable[[], Iterable[int]] = tuple,
    ) -> None:
        self.budget = budget
        self._shed = shed
        self._workers = workers  # the decode workers' pids now (a pool replaces workers that die)
        self._checked_at = 0.0
        self._shed_at = -_SHED_EVERY_S
        self._resident = 0
        self.refusals = 0

    def over(self) -> str | None:
        now = time.monotonic()
        if now - self._checked_at >= _CHECK_EVERY_S:
            self._resident = resident_bytes(self._workers())
            self._checked_at = now
        if self._resident < self.budget.refuse_above_bytes:
            return None
        if self._shed is not None and now - self._shed_at >= _SHED_EVERY_S:
            self._shed_at = now
            self._shed()
        self.refusals += 1
        return (
            f"memory budget nearly spent ({self._resident // MIB} MiB resident of "
            f"{self.budget.limit_bytes // MIB} MiB, {self.budget.source}): retry shortly"
        )

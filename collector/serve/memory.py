"""One memory budget for the sidecar: where it comes from, how it is shared, and when it is spent.

The budget is `--memory-limit` (TRACESCORE_MEMORY_LIMIT), else the container's own limit (cgroup v2
`memory.max`, v1 `memory.limit_in_bytes`), as the OpenTelemetry Collector's `memory_limiter` reads it;
without either there is no budget, and the sizes below are those of a small sidecar (`DEFAULT_SIZES`)
with no refusals. Within a budget the budget chooses the mode (issues 17 and 32; `describe` logs it at
start):

- the server itself takes `SERVER_BYTES` (its libraries, pyarrow and an open file);
- decode worker processes (`WORKER_BYTES` each) run when they fit below the refusal mark beside the
  server, DuckDB's and the retained traces' floors and `WORKING_BYTES` for requests in flight and open
  traces; else (a small budget) decoding runs in the server's process;
- of what the server and the workers leave, DuckDB gets `DUCKDB_SHARE` as its `memory_limit` (its
  buffer pool: it spills to disk beyond), at least `DUCKDB_MIN_BYTES`, with one thread below
  `DUCKDB_ONE_THREAD_BELOW` (each thread keeps buffers of its own), and the writer checkpoints when
  the write-ahead log reaches `WAL_SHARE` of it. Its share is of what is left, not of the whole:
  DuckDB keeps its buffers once filled, so a share that did not fit beside the server would keep
  memory over the refusal mark for good;
- the completed traces kept in memory for late and re-sent spans get `RETAINED_SHARE` of the rest,
  counted in bytes (estimated: collector/store/_tracker.py), not in spans;
- above `REFUSE_AT` of it (the memory the server and its workers hold, read from /proc, each page
  once, and library pages the kernel may drop left out: `held_bytes`) every new OTLP request is
  refused with a retryable answer (HTTP 503 + Retry-After, gRPC UNAVAILABLE + RetryInfo) until memory
  falls back: the exporters retry, nothing acknowledged is lost, and the kernel's OOM killer never has
  to choose.

Figures measured with bench/memory.py and bench/budget.py, in bench/README.md.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from collector.decode.cgroups import own_and_parents

MIB = 1024 * 1024
DUCKDB_SHARE = 0.4
# DuckDB's floor under a budget, with a write-ahead log checkpointed at a quarter of its memory
# (`WAL_SHARE`): what a checkpoint needs beside the rows not yet checkpointed and the indexes. Measured
# (../shared/reference/memory-floor.md, bench.run's memory step, issue 32): 64 MiB invalidated the
# database at 5,000 tool spans/s in every variant tried ("failed to pin block"); 128 MiB held there;
# 96 MiB (24 MiB log) held 1,000 tool spans/s in 384 MiB with no refusal where 128 MiB crept over the
# refusal mark, and 108 MiB (27) 5,000 in 512 MB.
DUCKDB_MIN_BYTES = 96 * MIB
DUCKDB_ONE_THREAD_BELOW = 1024 * MIB
# The writer checkpoints once the log is this share of DuckDB's memory: the rows it logged stay in
# DuckDB's memory until then (138 MiB of 256 with a 128 MiB trigger, 29 MiB with 16), and each
# checkpoint costs CPU beyond its bytes. At 5,000 tool spans/s in 512 MB (DuckDB 128 MiB, 40 s runs)
# the server took 94.5 % of the rate with a 16 MiB trigger (a checkpoint a second), 97 % with 32, 99 %
# with 64; at full rate by default a 64 MiB trigger cost ~25 MB more peak RSS than 32.
WAL_SHARE = 1 / 4
WAL_MIN_BYTES = 16 * MIB
WAL_MAX_BYTES = 128 * MIB
RETAINED_SHARE = 0.1
RETAINED_MIN_BYTES = 4 * MIB
REFUSE_AT = 0.9
# The server once it has taken spans, as `held_bytes` counts it: its anonymous memory (imports, pyarrow,
# gRPC, an open file: ~78 MiB beside DuckDB's and the retained traces' shares) and `HOT_FILE_BYTES`.
SERVER_BYTES = 110 * MIB
# The libraries' pages a server really uses. Under the bench's load at 1,000 tool spans/s, 20 of the
# server's 117 MiB of file-backed resident pages were referenced in each of three 20 s windows
# (/proc/PID/clear_refs, then smaps' Referenced: DuckDB's 11, Python's 2, the rest ~1 each); the other
# ~97 were read once, at import. Those are clean pages of files on disk, which the kernel drops first
# when a container nears its limit: in a kernel memory cgroup of 384 MiB the server ran that load for
# 150 s with no OOM kill, its anonymous memory at most 212 MiB, while its resident set counted 321.
# The budget counts the library pages up to this much, and never the rest (issue 32).
HOT_FILE_BYTES = 32 * MIB
WORKER_BYTES = 72 * MIB  # one spawned decode worker at the bench's full rate, resident (bench/memory.py: 71)
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


def container_limit(
    cgroup: Path = Path("/sys/fs/cgroup"), membership: Path = Path("/proc/self/cgroup")
) -> int | None:
    """The memory limit of the container this process runs in, if it sets one: the least limit of this
    process's own cgroup and its parents (the kernel enforces each of them). Where the container has
    its own cgroup namespace, as Docker and Kubernetes give by default, its cgroup is the mount's root;
    without one the root is the host's and the container's limit is on the process's own path
    (/proc/self/cgroup), which is read first."""
    limits = [limit for path in _limit_files(cgroup, membership) if (limit := _limit(path)) is not None]
    return min(limits) if limits else None


def _limit_files(cgroup: Path, membership: Path) -> list[Path]:
    """The limit files of this process's cgroup and of each parent up to the mount's root, v2 and v1."""
    return [
        directory / ("memory.max" if version == "v2" else "memory.limit_in_bytes")
        for version, directory in own_and_parents("memory", cgroup, membership)
    ]


def _limit(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        value = int(text)
    except (OSError, ValueError):  # absent, or "max": no limit there
        return None
    return value if 0 < value < _NO_LIMIT else None


def _memory_kib(pid: str) -> tuple[int, int]:
    """A process's private (anonymous and shared-memory) and file-backed resident KiB, from
    /proc/PID/status (0, 0 once it is gone)."""
    private = file_backed = 0
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, 0
    for line in text.splitlines():
        if line.startswith(("RssAnon:", "RssShmem:")):
            private += int(line.split()[1])
        elif line.startswith("RssFile:"):
            file_backed = int(line.split()[1])
    return private, file_backed


def held_bytes(worker_pids: Iterable[int] = ()) -> int:
    """Memory the server and its decode workers (by pid) hold, as the budget counts it, from /proc:
    the server's private memory and at most `HOT_FILE_BYTES` of its library pages, and each worker's
    private memory.

    A worker maps the same libraries as the server (Python, protobuf, pyarrow), whose pages the
    kernel keeps once and a container's memory accounting charges once: summed, an idle worker's 39 of
    65 MiB were the server's pages again (issue 32), and the budget refused requests for memory
    counted twice. Past `HOT_FILE_BYTES` the library pages are those read once at import, which the
    kernel drops before it lets a container run out: counted, they put a server at 1,000 tool spans/s
    over its 384 MiB budget's refusal mark, and refusals lasted until exporters gave up, in a pod that
    had room. Named workers only, not every child: a child just forked (by a plugin, or by a library
    that runs a helper program) shares the server's pages, and counted it doubles them (one sample
    summed 888 MiB for a 461 MiB server, issue 33)."""
    private, file_backed = _memory_kib("self")
    own = private + min(file_backed, HOT_FILE_BYTES // 1024)
    return 1024 * (own + sum(_memory_kib(str(pid))[0] for pid in worker_pids))


def resident_bytes(worker_pids: Iterable[int] = ()) -> int:
    """The server's whole resident set and each worker's private memory: `held_bytes` with every library
    page the server maps, for /metrics beside it."""
    private, file_backed = _memory_kib("self")
    return 1024 * (private + file_backed + sum(_memory_kib(str(pid))[0] for pid in worker_pids))


@dataclass(frozen=True, slots=True)
class Sizes:
    """What the budget (or, without one, the defaults) gives each part of the server."""

    duckdb_bytes: int
    duckdb_threads: int | None  # None: DuckDB's own default (one a core)
    retained_trace_bytes: int

    @property
    def wal_trigger_bytes(self) -> int:
        """The write-ahead log size at which the writer checkpoints (collector/store/writer.py)."""
        return min(WAL_MAX_BYTES, max(WAL_MIN_BYTES, int(self.duckdb_bytes * WAL_SHARE)))


# Without a budget: a sidecar's sizes (DuckDB's own default would be 80 % of the host's RAM), DuckDB at
# its floor. Measured at the bench's full rate (bench/memory.py, two runs each, issue 32): peak RSS of
# the server and its worker 513 MB with DuckDB at 256 MiB and a 128 MiB log, 463-467 at 128 / 64,
# 435-445 at 128 / 32 (these), 407-411 at 128 / 16, which checkpoints every second at 5,000 tool spans/s.
DEFAULT_SIZES = Sizes(duckdb_bytes=128 * MIB, duckdb_threads=None, retained_trace_bytes=16 * MIB)


@dataclass(frozen=True, slots=True)
class Budget:
    limit_bytes: int
    source: str  # "--memory-limit" or "container"

    @property
    def refuse_above_bytes(self) -> int:
        return int(self.limit_bytes * REFUSE_AT)

    def workers_allowed(self, wanted: int) -> int:
        """How many of the wanted decode workers fit below the refusal mark beside the server, DuckDB's
        and the retained traces' floors and the work in flight. Workers come before DuckDB's share
        above its floor: under load the server's one interpreter is what runs out first (at 5,000 tool
        spans/s in 512 MB, decoding in-process took 2,908; bench.run's memory step)."""
        room = self.refuse_above_bytes - SERVER_BYTES - DUCKDB_MIN_BYTES - RETAINED_MIN_BYTES - WORKING_BYTES
        return max(0, min(wanted, room // WORKER_BYTES))

    def sizes(self, workers: int) -> Sizes:
        """DuckDB's and the retained traces' shares of what the server and `workers` leave."""
        beyond = max(0, self.limit_bytes - SERVER_BYTES - workers * WORKER_BYTES)
        return Sizes(
            duckdb_bytes=max(DUCKDB_MIN_BYTES, int(beyond * DUCKDB_SHARE)),
            duckdb_threads=1 if self.limit_bytes < DUCKDB_ONE_THREAD_BELOW else None,
            retained_trace_bytes=max(RETAINED_MIN_BYTES, int(beyond * RETAINED_SHARE)),
        )


def intake_bytes(budget: Budget, workers: int) -> int:
    """What OTLP requests in flight may hold at once (collector/receive/intake.py): the room the refusal
    mark leaves beside the server, DuckDB, the retained traces and the decode workers that run, and at
    least `WORKING_BYTES`, which the budget's shares set aside for them."""
    shares = budget.sizes(workers)
    room = (
        budget.refuse_above_bytes
        - SERVER_BYTES
        - shares.duckdb_bytes
        - shares.retained_trace_bytes
        - workers * WORKER_BYTES
    )
    return max(WORKING_BYTES, room)


def sizes(budget: Budget | None, workers: int) -> Sizes:
    return budget.sizes(workers) if budget is not None else DEFAULT_SIZES


@dataclass(frozen=True, slots=True)
class Layout:
    """What the budget (or its absence) chose: how many decode workers, and each part's size."""

    workers: int
    sizes: Sizes


def layout(budget: Budget | None, wanted_workers: int) -> Layout:
    workers = wanted_workers if budget is None else budget.workers_allowed(wanted_workers)
    return Layout(workers, sizes(budget, workers))


def describe(budget: Budget | None, chosen: Layout) -> str:
    """The mode the budget chose, in one log line."""
    s = chosen.sizes
    threads = "its default threads" if s.duckdb_threads is None else f"{s.duckdb_threads} thread(s)"
    parts = (
        f"{chosen.workers} decode worker(s)" if chosen.workers else "decoding in this process",
        f"DuckDB {s.duckdb_bytes // MIB} MiB with {threads}, "
        f"a checkpoint every {s.wal_trigger_bytes // MIB} MiB of write-ahead log",
        f"retained traces {s.retained_trace_bytes // MIB} MiB",
    )
    if budget is None:
        return f"no memory budget (no --memory-limit, no container limit): {', '.join(parts)}, no refusals"
    return (
        f"memory budget {budget.limit_bytes // MIB} MiB ({budget.source}): {', '.join(parts)}; "
        f"new requests refused retryably above {budget.refuse_above_bytes // MIB} MiB held"
    )


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


def budget(
    memory_limit: str,
    cgroup: Path = Path("/sys/fs/cgroup"),
    membership: Path = Path("/proc/self/cgroup"),
) -> Budget | None:
    if memory_limit:
        return Budget(parse_size(memory_limit), "--memory-limit")
    limit = container_limit(cgroup, membership)
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
        self._held = 0
        self.refusals = 0

    def over(self) -> str | None:
        now = time.monotonic()
        if now - self._checked_at >= _CHECK_EVERY_S:
            self._held = held_bytes(self._workers())
            self._checked_at = now
        if self._held < self.budget.refuse_above_bytes:
            return None
        if self._shed is not None and now - self._shed_at >= _SHED_EVERY_S:
            self._shed_at = now
            self._shed()
        self.refusals += 1
        return (
            f"memory budget nearly spent ({self._held // MIB} MiB held of "
            f"{self.budget.limit_bytes // MIB} MiB, {self.budget.source}): retry shortly"
        )

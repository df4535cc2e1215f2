"""Decode workers: processes that prepare OTLP requests (collector/decode/prepare.py) beside the server.

One Python process runs one thread of Python at a time, and decoding and recognition were about half
of it; in worker processes they run on the other cores, and the server keeps its interpreter for
committing, completing and scoring runs (figures in bench/README.md).

Workers start in the background on the first request, and until they answer requests are prepared in
the server's own process, so start-up is no slower; after `IDLE_RETIRE_S` with no request they stop,
and the next request starts them again. A server that receives nothing holds no worker: ~66 MB each
(issue 32's idle target, bench/memory.py --idle). A worker that dies (killed, out of memory) costs no
request: the one it held is prepared in-process, and a new pool starts behind it. Workers are
spawned, not forked: the server already runs gRPC's and DuckDB's threads, which a fork does not carry
over safely.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from collector.decode._warm_up import WARM_UP_BODY
from collector.decode.cgroups import MEMBERSHIP, MOUNT, own_and_parents
from collector.decode.prepare import Encoding, PreparedRequest, prepare_request
from collector.recognise.declared import active as declared_conventions
from collector.store.memory_settings import apply_memory_settings

log = logging.getLogger("tracescore.ingest")

MAX_AUTO_WORKERS = 4
# Spawning a worker costs ~1 s of CPU (its imports and warm-up), paid again after each retirement: ten
# minutes keeps workers through the pauses between an agent's runs and frees them when traffic stops.
IDLE_RETIRE_S = 600.0
_PARENT_CHECK_S = 0.5


def auto_workers(cgroup: Path = MOUNT, membership: Path = MEMBERSHIP) -> int:
    """One worker per core this process may use beyond the first (the server's), at most four."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = cpu_quota(cgroup, membership)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(0, min(MAX_AUTO_WORKERS, cores - 1))


def cpu_quota(cgroup: Path = MOUNT, membership: Path = MEMBERSHIP) -> float | None:
    """The CPUs a container's quota allows (`docker --cpus`, a Kubernetes CPU limit), if it sets one: the
    least quota of this process's cgroup and its parents (collector/decode/cgroups.py).

    The affinity mask still shows every core of the host there, and each idle worker costs ~67 MB:
    four of them in a one-CPU pod would only take memory and contend for the one CPU."""
    quotas = []
    for version, directory in own_and_parents("cpu", cgroup, membership):
        if version == "v2":  # "max 100000", or "150000 100000"
            fields = _read(directory / "cpu.max").split()[:2]
        else:
            fields = [_read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")]
        if len(fields) == 2 and (quota := _cpus(*fields)) is not None:
            quotas.append(quota)
    return min(quotas) if quotas else None


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _cpus(quota: str, period: str) -> float | None:
    if quota in ("max", "-1"):
        return None
    try:
        return max(1.0, int(quota) / int(period))
    except (ValueError, ZeroDivisionError):
        return None


def _worker_init(gc_thresholds: tuple[int, int, int], server_pid: int) -> None:
    # Ctrl-C reaches the whole process group; the server stops its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    apply_memory_settings()
    gc.set_threshold(*gc_thresholds)
    # The server's pid as it spawned us, not getppid(): a server killed while we started is gone already.
    threading.Thread(target=_exit_with_parent, args=(server_pid,), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """A server killed outright (SIGKILL, OOM) cannot stop its workers, and they would wait for work
    forever (each holds both ends of its task queue, so it never sees the server go): they look."""
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_S)
    os._exit(0)


def _ready() -> int:
    """A worker's first request paid for its first use of everything (protobuf's classes, the
    conventions, Arrow's conversions): ~0.5 s, measured as that request's acknowledgement at the start of
    a load. A small agent trace, prepared once at start, pays it instead."""
    prepare_request(WARM_UP_BODY, "protobuf")
    return os.getpid()


@contextlib.contextmanager
def _bare_main_module() -> Iterator[None]:
    """A spawned process first imports its parent's main module, in case the parent pickled something
    defined there. tracescore's is the whole CLI (~1.1 s of CPU and ~60 MB a worker, measured), and
    nothing a worker runs lives there; the pool spawns its workers while this holds (in `start`)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


class Preparer:
    """Prepares requests in worker processes once they are up, in the caller's process until then (and
    always, with no workers)."""

    def __init__(
        self,
        workers: int,
        gc_thresholds: tuple[int, int, int] = (700, 10, 10),
        idle_retire_s: float = IDLE_RETIRE_S,
    ) -> None:
        self.workers = workers
        self._gc_thresholds = gc_thresholds
        self._idle_retire_s = idle_retire_s
        self._last_request = time.monotonic()
        self._retire_timer: asyncio.TimerHandle | None = None
        self._pool: ProcessPoolExecutor | None = None
        self._ready = False
        self._closed = False
        self.in_flight = 0  # requests handed to a worker and not yet back
        self.restarts = 0
        self.prepared_in_workers = 0
        self.prepared_here = 0

    @property
    def ready(self) -> bool:
        """Whether requests go to the workers now."""
        return self._ready

    def worker_pids(self) -> list[int]:
        """The pids of the worker processes running now (the memory guard counts these and no other child)."""
        pool = self._pool
        # The executor's own record of its processes: private to concurrent.futures, but the only one.
        processes = pool._processes if pool is not None else None
        return list(processes) if processes else []

    def start(self) -> None:
        if self.workers <= 0 or self._closed:
            return
        pool = ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init,
            initargs=(self._gc_thresholds, os.getpid()),
        )
        self._pool, self._ready = pool, False
        with _bare_main_module():  # each submit spawns a worker until all are up
            warming = [pool.submit(_ready) for _ in range(self.workers)]
        remaining = len(warming)

        def warmed(future: Future[int]) -> None:
            nonlocal remaining
            remaining -= 1
            if future.cancelled() or future.exception() is not None:
                if self._pool is pool and not self._closed:
                    log.error("decode workers did not start; decoding in the server's process")
                return
            if remaining == 0 and self._pool is pool:
                self._ready = True

        for future in warming:
            future.add_done_callback(warmed)

    async def prepare(self, body: bytes, encoding: Encoding) -> PreparedRequest:
        """Decode, recognise and build rows (raises UndecodableRequest for an unreadable body)."""
        self._last_request = time.monotonic()
        if self._pool is None and self.workers > 0 and not self._closed:
            self.start()  # this request is prepared here; the workers take the ones after they are up
            self._retire_when_idle()
        pool = self._pool
        future = None
        if pool is not None and self._ready:
            try:
                # The server's declared conventions go with each request: a worker is not told of a reload.
                future = pool.submit(prepare_request, body, encoding, declared_conventions.sources())
            except BrokenProcessPool:  # a worker died since the last request
                self._replace(pool)
            except RuntimeError:  # shut down meanwhile: the server is stopping
                pass
        if future is None:
            self.prepared_here += 1
            return prepare_request(body, encoding, declared_conventions.sources())
        self.in_flight += 1
        broken = False
        try:
            return await asyncio.wrap_future(future)  # an undecodable body raises here too
        except BrokenProcessPool:
            broken = True
        finally:
            self.in_flight -= 1
            self.prepared_in_workers += not broken
            # The future holds the worker's exception, whose traceback holds this frame, which holds the
            # future: a cycle that kept each refused body (and its callers' frames) until serve's rare
            # full collection (GC_THRESHOLDS). Measured: five 61 MB bodies answered 400 kept 360 MB.
            del future
        assert pool is not None
        self._replace(pool)
        self.prepared_here += 1
        return prepare_request(body, encoding, declared_conventions.sources())

    def _retire_when_idle(self) -> None:
        """Stop the workers once no request has come for `idle_retire_s` (checked on the event loop)."""
        if self._retire_timer is not None:
            self._retire_timer.cancel()
        due = self._last_request + self._idle_retire_s
        self._retire_timer = asyncio.get_running_loop().call_at(
            asyncio.get_running_loop().time() + max(0.0, due - time.monotonic()), self._retire_if_idle
        )

    def _retire_if_idle(self) -> None:
        self._retire_timer = None
        pool = self._pool
        if pool is None or self._closed:
            return
        if self.in_flight or time.monotonic() - self._last_request < self._idle_retire_s:
            self._retire_when_idle()
            return
        log.info("no request for %.0f s: decode workers stopped until the next one", self._idle_retire_s)
        self._pool, self._ready = None, False
        pool.shutdown(wait=False)

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        if self._pool is not broken or self._closed:
            return  # another request already replaced it
        log.error("a decode worker died; starting new workers (requests are prepared in-process meanwhile)")
        self.restarts += 1
        broken.shutdown(wait=False, cancel_futures=True)
        self._pool, self._ready = None, False
        self.start()

    def close(self) -> None:
        """Stop the workers once the requests they hold are prepared."""
        self._closed, self._ready = True, False
        if self._retire_timer is not None:
            self._retire_timer.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

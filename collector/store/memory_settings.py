"""How the server's and the decode workers' processes allocate: set once, first thing, in each (issue 17).

Three settings, each measured at the bench's full rate (bench/memory.py, figures in bench/README.md):

- glibc's malloc arenas: each thread that contends for malloc gets an arena of its own (up to 8 a
  core), and freed memory stays in the arena it came from. gRPC's, DuckDB's and Python's threads
  allocate and free in turns, so the arenas hold each other's garbage: `MALLOC_ARENA_MAX=2`, set with
  `mallopt` here (this process has no other thread yet) and in the environment the spawned decode
  workers inherit (glibc reads it as they start).
- Arrow's memory pool: mimalloc by default, which keeps what it freed for reuse; the writer builds
  short-lived tables, so `ARROW_DEFAULT_MEMORY_POOL=system` hands memory back to malloc.
- pandas: pyarrow imports it, if it is installed, at its first conversion of a Python list, to ask
  whether the list is a pandas object (~55 MB a process, for nothing tracescore uses). pyarrow asks
  once: it is told no here, and pyarrow still imports pandas whenever something really wants it.

A value already in the environment wins: `MALLOC_ARENA_MAX=8 tracescore serve` keeps 8.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

from collector.model.arrow import after_import

MALLOC_ARENA_MAX = "2"
ARROW_POOL = "system"
_M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h


def apply_memory_settings() -> None:
    """Set the allocators of this process (and of the processes it spawns from now on)."""
    os.environ.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENA_MAX)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_POOL)
    _limit_malloc_arenas(os.environ["MALLOC_ARENA_MAX"])
    # pyarrow is imported on first use (scoring/verdict/arrow.py), after this in the server; in a
    # process that imported it before, its default pool was chosen then, from the environment of that
    # moment: the hook makes the choice stick either way.
    after_import(_arrow_settings)


def _arrow_settings(pa: ModuleType) -> None:
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL") == "system":
        pa.set_memory_pool(pa.system_memory_pool())
    _settle_pandas_question(pa)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library's functions, resolved once. `CDLL(None)` is the process's own symbol table, in which
    libc's functions already are; `ctypes.util.find_library("c")`, used before, ran `/sbin/ldconfig -p`
    in a child process on every call (issue 33), and the memory guard counted that child's copy of the
    server's pages as the server's."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def _limit_malloc_arenas(value: str) -> None:
    libc = _libc()
    with contextlib.suppress(ValueError, AttributeError):  # glibc only; musl has no arenas to limit
        if libc is not None:
            libc.mallopt(_M_ARENA_MAX, int(value))


def release_free_memory() -> None:
    """Hand the memory malloc holds free back to the system (glibc's `malloc_trim`), when it is short."""
    libc = _libc()
    with contextlib.suppress(AttributeError):
        if libc is not None:
            libc.malloc_trim(0)


class _NoPandas(MetaPathFinder):
    """An import finder that says pandas is not there, for one question of pyarrow's."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == "pandas":
            raise ModuleNotFoundError("not for pyarrow's question", name=fullname)
        return None


def _settle_pandas_question(pa: ModuleType) -> None:
    if "pandas" in sys.modules:
        return  # already imported: nothing left to save
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])  # pyarrow's first list conversion asks once whether pandas is installed
    finally:
        sys.meta_path.remove(finder)

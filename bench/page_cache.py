"""Drops the page cache of the shared libraries `tracescore serve` maps, before a budget run puts it in a
memory cgroup (bench/cgroup.py).

A page already in the cache stays charged to whichever cgroup first read it (here: the shell that ran
the tests or an earlier server), not to the new cgroup; a real pod reads its libraries itself. Without
this the cgroup's usage would understate a pod's. It is best effort: `POSIX_FADV_DONTNEED` leaves pages
another process still maps (the lead's own server, say). How much of the files was cached before and
after is measured with mincore(2) over a read-only mapping, which faults nothing in.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import sysconfig
from pathlib import Path

from collector.serve.memory import MIB

# The packages whose native libraries the server loads (DuckDB, Arrow, gRPC, protobuf's upb).
PACKAGES = ("duckdb", "_duckdb", "pyarrow", "grpc", "google/protobuf", "google/_upb")

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
_MAP_FAILED = ctypes.c_void_p(-1).value


def library_files() -> list[Path]:
    """The `.so` files of `PACKAGES` in this interpreter's site-packages (the venv the server runs
    from), and libpython if the interpreter links it."""
    site = Path(sysconfig.get_paths()["purelib"])
    found: set[Path] = set()
    for package in PACKAGES:
        found.update(path.resolve() for path in site.glob(f"{package}*.so*") if path.is_file())
        if (site / package).is_dir():
            found.update(path.resolve() for path in (site / package).rglob("*.so*") if path.is_file())
    libdir, library = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LDLIBRARY")
    if libdir and library and library.endswith(".so") and (Path(libdir) / library).is_file():
        found.add((Path(libdir) / library).resolve())
    return sorted(found)


def cached_bytes(path: Path) -> int:
    """How much of `path` is in the page cache now (mincore(2): one byte per page, bit 0 = resident)."""
    size = path.stat().st_size
    if size == 0:
        return 0
    page = mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            pages = (size + page - 1) // page
            vector = ctypes.create_string_buffer(pages)
            if _libc.mincore(address, size, vector) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
            return sum(byte & 1 for byte in vector.raw) * page
        finally:
            _libc.munmap(address, size)
    finally:
        os.close(fd)


def drop(paths: list[Path]) -> dict[str, float]:
    """Asks the kernel to drop each file's cached pages; how many MB (MiB) were cached before and after."""
    before = sum(cached_bytes(path) for path in paths)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    after = sum(cached_bytes(path) for path in paths)
    return {
        "library_files": len(paths),
        "library_cache_before_mb": before / MIB,
        "library_cache_after_mb": after / MIB,
    }

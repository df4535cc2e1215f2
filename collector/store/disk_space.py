"""Free space on the database's file system, asked before every write that could fill it.

Why: DuckDB survives a commit that finds the disk full (the commit fails and the whole batch is
refused, retryably) but not a checkpoint that does: it invalidates the database, every later
statement fails until the process restarts (collector/store/_fatal.py), and each restart on the
still-full disk failed again. So tracescore does not let DuckDB find out. A group commit goes ahead
only if `reserve` bytes stay free after its rows; a checkpoint only if the write-ahead log's size
stays free on top of that (a checkpoint writes what the log holds into new blocks of the file before
it lets the log go; the reserve covers the rest it writes, such as the row groups and indexes it
rewrites). Below that, ingest is refused retryably and checkpoints wait; both go on by themselves once
space is freed. `serve` refuses to start below the reserve (exit 2).

What this cannot prevent: another process filling the disk while a checkpoint runs. DuckDB then
invalidates the database and serve exits 70; restarted, it refuses to start (exit 2, one line) until
space is freed, and then starts with every acknowledged span, which the WAL kept.

The free space is what an unprivileged process may still use (`f_bavail`), not the blocks a file
system keeps back for root: a server running as root stops before those too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
# Room for a group commit's write-ahead log entries beyond the bytes of its rows, run completions,
# verdicts and DuckDB's own metadata and temporary files; a 64 MiB OTLP request (the largest taken by
# default) fits in it besides.
DEFAULT_RESERVE_BYTES = 64 * MIB
RESERVE_SETTING = "TRACESCORE_DISK_RESERVE"
_NO_SPACE = "No space left on device"


def no_space(exc: BaseException) -> bool:
    """Whether DuckDB (or the OS) failed because the disk is full."""
    return _NO_SPACE in str(exc)


def _mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB"


@dataclass(frozen=True, slots=True)
class DiskSpace:
    """The file system holding `folder` (the database's), which should keep `reserve_bytes` free."""

    folder: Path
    reserve_bytes: int = DEFAULT_RESERVE_BYTES

    @classmethod
    def of_database(cls, database: Path, reserve_bytes: int = DEFAULT_RESERVE_BYTES) -> DiskSpace:
        folder = database.absolute().parent
        while not folder.exists() and folder != folder.parent:  # not created yet: where it will be
            folder = folder.parent
        return cls(folder, reserve_bytes)

    def free_bytes(self) -> int | None:
        """Free bytes now; None when the file system cannot say (the check then lets writes go on)."""
        try:
            stat = os.statvfs(self.folder)
        except OSError:
            return None
        return stat.f_bavail * stat.f_frsize

    def shortage(self, writing: int = 0) -> str | None:
        """Why `writing` bytes must not be written now, or None when the reserve stays free after them.
        A statvfs call: a few microseconds, cheap enough before every group commit."""
        free = self.free_bytes()
        if free is None or free - writing >= self.reserve_bytes:
            return None
        beyond = f" beyond the {_mib(writing)} about to be written" if writing > 0 else ""
        return (
            f"disk full: {_mib(free)} free at {self.folder}, and tracescore keeps {_mib(self.reserve_bytes)} "
            f"free ({RESERVE_SETTING}){beyond}"
        )

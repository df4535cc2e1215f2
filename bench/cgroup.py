"""A kernel memory cgroup of a given limit for the server a budget run measures (issue 32): the
kernel's judgement of whether the process tree would live in a pod of that size, beside the server's own
`--memory-limit` accounting.

`memory_cgroup(limit)` makes a child of this process's own memory cgroup (else of the hierarchy's root):
cgroup v2 where the parent delegates the memory controller (`+memory` in its `cgroup.subtree_control`),
else v1's memory controller. Swap is limited too where the interface allows (v1
`memory.memsw.limit_in_bytes` = the limit, v2 `memory.swap.max` = 0), so a limit cannot be dodged by
swapping. `MemoryCgroup.preexec` moves a subprocess into it before it execs; peak usage, the peak of
its anonymous part (sampled) and the kernel's OOM kills are read while and after it runs, and the
directory is removed at exit once its processes have ended.

Where no writable memory cgroup can be made (not Linux, not root, a read-only or absent hierarchy) it
yields `Unavailable` with the reason in one line: the caller runs without one and says so.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from collector.serve.memory import MIB, parse_size

SAMPLE_S = 0.2
RMDIR_WAIT_S = 10.0
_names = itertools.count()


@dataclass(frozen=True)
class Unavailable:
    """No memory cgroup could be made; `why` in one line."""

    why: str


@dataclass(frozen=True)
class _Place:
    """Where a child cgroup goes: the parent directory and the interface it speaks."""

    parent: Path
    version: str  # "v1" or "v2"


def _mounts() -> list[tuple[Path, str, set[str]]]:
    """The cgroup mounts: mount point, filesystem type and super options (v1's controllers)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mine, _, theirs = line.partition(" - ")
        fields, rest = mine.split(), theirs.split()
        if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
            found.append((Path(fields[4]), rest[0], set(rest[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller list, and "" (the v2 line's) for v2."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        paths[controllers] = path
    return paths


def _candidates(mount: Path, own: str | None) -> list[Path]:
    """This process's own cgroup under `mount` if it is there, then the mount's root."""
    own_dir = mount / own.lstrip("/") if own else None
    return [own_dir, mount] if own_dir and own_dir != mount and own_dir.is_dir() else [mount]


def _place() -> _Place | Unavailable:
    if sys.platform != "linux":
        return Unavailable(f"not Linux ({sys.platform}): no kernel memory cgroups")
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError as exc:
        return Unavailable(f"cannot read this process's cgroups: {exc}")
    for mount, kind, _ in mounts:
        if kind == "cgroup2":
            for parent in _candidates(mount, own.get("")):
                with contextlib.suppress(OSError):
                    if "memory" in (parent / "cgroup.subtree_control").read_text().split():
                        return _Place(parent, "v2")
    for mount, kind, options in mounts:
        if kind == "cgroup" and "memory" in options:
            v1_own = next((p for c, p in own.items() if "memory" in c.split(",")), None)
            return _Place(_candidates(mount, v1_own)[0], "v1")
    return Unavailable(
        "no cgroup v2 hierarchy delegates the memory controller and no v1 memory hierarchy is mounted"
    )


class MemoryCgroup:
    """A memory cgroup made by `memory_cgroup`: `preexec` for subprocesses, the kernel's figures."""

    def __init__(self, path: Path, version: str, limit_bytes: int) -> None:
        self.path = path
        self.version = version
        self.limit_bytes = limit_bytes
        self.swap_limited = False
        self._procs = str(path / "cgroup.procs")
        self._peak_sampled = 0
        self._anon_peak = 0

    def preexec(self) -> None:
        """For `subprocess.Popen(preexec_fn=...)`: moves the child into the cgroup before it execs, so
        whatever it execs and starts is charged here from its first page."""
        fd = os.open(self._procs, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)

    def _read(self, name: str) -> str:
        return (self.path / name).read_text()

    def _stat(self) -> dict[str, int]:
        return {
            key: int(value)
            for key, value in (line.split() for line in self._read("memory.stat").splitlines())
        }

    def usage_bytes(self) -> int:
        return int(self._read("memory.usage_in_bytes" if self.version == "v1" else "memory.current"))

    def anon_bytes(self) -> int:
        """Anonymous memory charged here: v1 counts it as `rss` (`total_rss` with descendants)."""
        stat = self._stat()
        if self.version == "v1":
            return max(stat.get("rss", 0), stat.get("total_rss", 0))
        return stat.get("anon", 0)

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._peak_sampled = max(self._peak_sampled, self.usage_bytes())
            self._anon_peak = max(self._anon_peak, self.anon_bytes())

    def peak_bytes(self) -> int:
        """The kernel's high-water mark of usage (v2 without `memory.peak`: the sampled maximum)."""
        with contextlib.suppress(OSError, ValueError):
            name = "memory.max_usage_in_bytes" if self.version == "v1" else "memory.peak"
            return max(int(self._read(name)), self._peak_sampled)
        return self._peak_sampled

    def anon_peak_bytes(self) -> int:
        """The largest anonymous part seen (sampled every `SAMPLE_S` and at the end)."""
        return self._anon_peak

    def oom_kills(self) -> int:
        """Processes the kernel's OOM killer ended in this cgroup."""
        text = self._read("memory.oom_control" if self.version == "v1" else "memory.events")
        fields = dict(line.split() for line in text.splitlines() if line.strip())
        return int(fields.get("oom_kill", 0))

    def figures(self) -> dict[str, float | int | str]:
        """What the kernel saw, in MB (MiB)."""
        self.sample()
        return {
            "cgroup": self.version,
            "cgroup_limit_mb": self.limit_bytes / MIB,
            "cgroup_peak_mb": self.peak_bytes() / MIB,
            "cgroup_anon_peak_mb": self.anon_peak_bytes() / MIB,
            "oom_kills": self.oom_kills(),
        }

    def _limit(self) -> None:
        if self.version == "v1":
            (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
            swap = self.path / "memory.memsw.limit_in_bytes"  # memory + swap: absent without swap accounting
            if swap.exists():
                swap.write_text(str(self.limit_bytes))
                self.swap_limited = True
        else:
            (self.path / "memory.max").write_text(str(self.limit_bytes))
            swap = self.path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
                self.swap_limited = True


def _remove(path: Path) -> None:
    """rmdir once its processes have gone (a process just ended may linger a moment)."""
    deadline = time.monotonic() + RMDIR_WAIT_S
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if time.monotonic() > deadline:
                print(
                    f"WARNING: could not remove the memory cgroup {path}: {exc}", file=sys.stderr, flush=True
                )
                return
            time.sleep(0.1)


def _make(limit_bytes: int) -> MemoryCgroup | Unavailable:
    place = _place()
    if isinstance(place, Unavailable):
        return place
    path = place.parent / f"tracescore-bench-{os.getpid()}-{next(_names)}"
    try:
        path.mkdir()
    except OSError as exc:
        return Unavailable(
            f"cannot make a {place.version} memory cgroup under {place.parent}: {exc.strerror}"
        )
    cgroup = MemoryCgroup(path, place.version, limit_bytes)
    try:
        cgroup._limit()
    except OSError as exc:
        _remove(path)
        return Unavailable(f"cannot limit the {place.version} memory cgroup {path}: {exc.strerror}")
    return cgroup


@contextlib.contextmanager
def memory_cgroup(limit: str | int) -> Iterator[MemoryCgroup | Unavailable]:
    """A new memory cgroup limited to `limit` (bytes, or a size such as "448MiB"), sampled while open
    and removed at exit (read its figures before): `Unavailable` when none can be made."""
    cgroup = _make(limit if isinstance(limit, int) else parse_size(limit))
    if isinstance(cgroup, Unavailable):
        yield cgroup
        return
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(SAMPLE_S):
            cgroup.sample()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield cgroup
    finally:
        stop.set()
        sampler.join()
        _remove(cgroup.path)

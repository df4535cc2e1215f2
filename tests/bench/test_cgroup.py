"""bench/cgroup.py against the real kernel: a child that allocates past its memory cgroup's limit is
OOM-killed and the kill is read back; one within it lives; the cgroup's directory is gone afterwards.
Skipped, with the module's reason, where no memory cgroup can be made (not Linux, not root, read-only)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench.cgroup import MemoryCgroup, memory_cgroup
from collector.serve.memory import MIB

LIMIT = 64 * MIB


def _touch(mib: int) -> list[str]:
    """A Python child that writes to every page of `mib` MiB, holds it a moment and exits 0."""
    code = (
        f"import time\nb = bytearray({mib} << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(0.6)"
    )
    return [sys.executable, "-c", code]


def _run_in(mib: int) -> tuple[int, dict[str, float | int | str], MemoryCgroup]:
    with memory_cgroup(LIMIT) as cgroup:
        if not isinstance(cgroup, MemoryCgroup):
            pytest.skip(cgroup.why)
        returncode = subprocess.run(
            _touch(mib), check=False, preexec_fn=cgroup.preexec, timeout=60
        ).returncode
        figures = cgroup.figures()
    return returncode, figures, cgroup


def test_a_child_over_the_limit_is_oom_killed_and_the_kill_is_read() -> None:
    returncode, figures, cgroup = _run_in(200)
    assert returncode == -9
    assert isinstance(figures["oom_kills"], int) and figures["oom_kills"] >= 1
    assert figures["cgroup_peak_mb"] <= LIMIT / MIB + 1
    assert not cgroup.path.exists()


def test_a_child_within_the_limit_lives_and_its_memory_is_counted() -> None:
    returncode, figures, cgroup = _run_in(24)
    assert returncode == 0
    assert figures["oom_kills"] == 0
    assert 24 <= figures["cgroup_peak_mb"] <= LIMIT / MIB
    assert 24 <= figures["cgroup_anon_peak_mb"] <= figures["cgroup_peak_mb"]
    assert not cgroup.path.exists()


def test_the_limit_cannot_be_dodged_by_swap_where_swap_is_accounted() -> None:
    with memory_cgroup("64MiB") as cgroup:
        if not isinstance(cgroup, MemoryCgroup):
            pytest.skip(cgroup.why)
        assert cgroup.limit_bytes == LIMIT
        swap = cgroup.path / ("memory.memsw.limit_in_bytes" if cgroup.version == "v1" else "memory.swap.max")
        if not swap.exists():
            pytest.skip(f"{swap.name} absent: this kernel accounts no swap")
        assert swap.read_text().strip() == (str(LIMIT) if cgroup.version == "v1" else "0")
        assert cgroup.swap_limited

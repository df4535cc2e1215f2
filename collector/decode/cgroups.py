"""Where a container's limits are kept: this process's own cgroup and each parent, cgroup v2 and v1.

Where the container has its own cgroup namespace, as Docker and Kubernetes give by default, its cgroup
is the mount's root; without one the root is the host's, and the container's limits are on the
process's own path (`/proc/self/cgroup`). The kernel enforces each level's limit, so the one that holds
is the least of them. The memory budget (collector/serve/memory.py) and the decode workers' count
(collector/decode/pool.py) read their limits here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

MOUNT = Path("/sys/fs/cgroup")
MEMBERSHIP = Path("/proc/self/cgroup")

Version = Literal["v2", "v1"]


def own_and_parents(
    controller: str, cgroup: Path = MOUNT, membership: Path = MEMBERSHIP
) -> list[tuple[Version, Path]]:
    """The directories of this process's cgroup and of each parent up to the mount's root, the own one
    first: v2's (the unified hierarchy) then v1's for `controller` (mounted at `cgroup/<controller>`)."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        lines = []
    own = {"v2": "/", "v1": "/"}
    for line in lines:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        if controllers == "":
            own["v2"] = path or "/"
        elif controller in controllers.split(","):
            own["v1"] = path or "/"
    found: list[tuple[Version, Path]] = []
    version: Version
    for version, root in (("v2", cgroup), ("v1", cgroup / controller)):
        parts = [part for part in own[version].split("/") if part and part != ".."]
        found += [(version, root.joinpath(*parts[:depth])) for depth in range(len(parts), -1, -1)]
    return found

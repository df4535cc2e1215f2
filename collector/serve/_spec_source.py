"""Spec files for a running server: loaded at start, reloaded when they change.

A broken edit is reported and the last good specs keep running.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scoring import SpecError

if TYPE_CHECKING:
    from scoring import Spec, SpecSet

log = logging.getLogger("tracescore.specs")

Signature = tuple[tuple[str, int, int], ...]


def _signature(paths: list[Path]) -> Signature:
    files: list[tuple[str, int, int]] = []
    for path in paths:
        candidates = sorted(path.rglob("*")) if path.is_dir() else [path]
        for file in candidates:
            try:
                stat = file.stat()
            except OSError:
                files.append((str(file), -1, -1))
                continue
            if file.is_file():
                files.append((str(file), stat.st_mtime_ns, stat.st_size))
    return tuple(files)


class SpecSource:
    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.specs: list[Spec] = _load(paths) if paths else []  # a broken start is the user's to fix
        self._indexed: SpecSet | None = None
        self._signature = _signature(paths)
        self.error: str | None = None
        self.reloads = 0
        self.failed_reloads = 0
        self.loaded_at = time.time()

    @property
    def indexed(self) -> SpecSet:
        """The same specs indexed by what they select: each completed run is tested only against the
        specs that can pick it (a thousand specs cost about what one does). Built at first use, by the
        scorer's thread, which alone reloads the specs."""
        if self._indexed is None:
            from scoring import SpecSet

            self._indexed = SpecSet(self.specs)
        return self._indexed

    def refresh(self) -> bool:
        """Reload if any file changed; True when the specs in force changed."""
        if not self.paths:
            return False
        signature = _signature(self.paths)
        if signature == self._signature:
            return False
        self._signature = signature
        try:
            specs = _load(self.paths)
        except (SpecError, OSError) as exc:
            self.error = str(exc)
            self.failed_reloads += 1
            log.error("spec reload failed, the last good specs keep running: %s", exc)
            return False
        self.specs, self._indexed, self.error = specs, None, None
        self.reloads += 1
        self.loaded_at = time.time()
        log.info("reloaded %d spec(s): %s", len(specs), ", ".join(s.name for s in specs))
        return True


def _load(paths: list[Path]) -> list[Spec]:
    # The spec models (pydantic, jsonschema, RE2: ~8 MiB) load with the first spec file, never in a
    # server given none (issue 33).
    from scoring import load_specs

    return load_specs(paths)

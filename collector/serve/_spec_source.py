"""Spec files for a running server: loaded at start, reloaded when they change.

A broken edit is reported and the last good specs keep running.

A file caught while it is being written is not read as it stands: a start that read a half-written
file was refused ("holds no spec"), and a half-written list of tools can parse as a shorter one,
whose verdicts the evidence would not support. So a file that changed within the last `_QUIET_S` is
read only once it has stood still that long, and a read during which a file changed is read again: at
start for up to `_SETTLE_S`, at a reload at the next poll. Writers that rename a finished file into
place (editors, `kubectl` updating a ConfigMap volume, `mv`) are never caught mid-write, and that is
what docs/online.md asks of them: a writer that pauses longer than `_QUIET_S` half-way can still be.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from scoring import SpecError

if TYPE_CHECKING:
    from scoring import Spec, SpecSet

log = logging.getLogger("tracescore.specs")

Signature = tuple[tuple[str, int, int], ...]
_Loaded = TypeVar("_Loaded")

# A spec file changed this recently may still be being written: it is read once it has stood still.
_QUIET_S = 0.25
# At start, how long a file being written is waited for before it is read as it stands.
_SETTLE_S = 1.5


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


def _being_written(signature: Signature) -> bool:
    """Whether a file changed within the last `_QUIET_S` (by its modification time; one set in the
    future by a skewed clock is not waited for)."""
    now_ns = time.time_ns()
    return any(0 <= now_ns - mtime_ns < _QUIET_S * 1e9 for _, mtime_ns, _ in signature if mtime_ns >= 0)


def _load_settled(paths: list[Path]) -> tuple[list[Spec], Signature]:
    """The specs at start, read once no file is being written (waited for up to `_SETTLE_S`), with the
    signature of the files they were read from."""
    return load_settled(paths, _load, SpecError)


def load_settled(
    paths: list[Path], load: Callable[[list[Path]], _Loaded], refused: type[Exception]
) -> tuple[_Loaded, Signature]:
    """What `load` makes of the files at start, read as the specs are (the conventions file too)."""
    deadline = time.monotonic() + _SETTLE_S
    while True:
        signature = _signature(paths)
        if _being_written(signature) and time.monotonic() < deadline:
            time.sleep(_QUIET_S / 5)
            continue
        try:
            loaded = load(paths)
        except refused:
            # Read again if a file moves on within a quiet period: it was caught mid-write. If not, it
            # is the user's to fix, reported as it stands.
            if time.monotonic() < deadline:
                time.sleep(_QUIET_S)
                if _signature(paths) != signature:
                    continue
            raise
        if _signature(paths) == signature or time.monotonic() >= deadline:
            return loaded, signature


@dataclass(frozen=True, slots=True)
class Reading(Generic[_Loaded]):
    """A changed set of files, read whole: what `load` made of them, or why it refused them."""

    signature: Signature
    loaded: _Loaded | None
    refused: Exception | None


def read_if_changed(
    paths: list[Path],
    seen: Signature,
    load: Callable[[list[Path]], _Loaded],
    refused: type[Exception] | tuple[type[Exception], ...],
) -> Reading[_Loaded] | None:
    """The files read again when they changed since `seen` (a reload: the specs, the conventions file);
    None while they are as last read, being written, or written to while read (the next poll reads
    them again, so what is read is never half of a new file)."""
    signature = _signature(paths)
    if signature == seen or _being_written(signature):
        return None
    try:
        loaded = load(paths)
    except refused as exc:
        return Reading(signature, None, exc) if _signature(paths) == signature else None
    return Reading(signature, loaded, None) if _signature(paths) == signature else None


class SpecSource:
    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        specs, self._signature = _load_settled(paths) if paths else ([], ())
        self.specs: list[Spec] = specs  # a broken start is the user's to fix
        self._indexed: SpecSet | None = None
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
        """Reload if any file changed; True when the specs in force changed. A file being written is
        left for a later poll, once it has stood still."""
        if not self.paths:
            return False
        reading = read_if_changed(self.paths, self._signature, _load, (SpecError, OSError))
        if reading is None:
            return False
        self._signature = reading.signature
        if reading.refused is not None or reading.loaded is None:
            self.error = str(reading.refused)
            self.failed_reloads += 1
            log.error("spec reload failed, the last good specs keep running: %s", reading.refused)
            return False
        specs = reading.loaded
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

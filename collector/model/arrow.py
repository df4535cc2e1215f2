"""pyarrow, imported the first time it is used rather than when a module that uses it is imported.

An idle `tracescore serve` has no Arrow batch to build, and pyarrow with numpy is ~37 MB of its
resident memory (bench/memory.py --idle: 145 MB for the server with it at start, issue 32 asks ≤ 150
with nothing received). Every module of the serve path takes `pa` from here; the first attribute
read from any thread imports pyarrow once, under a lock, runs the hooks registered with
`after_import` (the server's allocator settings, collector/store/memory_settings.py) and then serves
every later read from its own namespace, as the module itself would.

Type checkers see `import pyarrow as pa`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

__all__ = ["after_import", "pa"]

_NAME = "pyarrow"
_lock = threading.RLock()
_hooks: list[Callable[[ModuleType], None]] = []
_imported: list[ModuleType] = []  # pyarrow, once imported through `pa`


def _load() -> ModuleType:
    with _lock:
        if not _imported:
            module = importlib.import_module(_NAME)
            for hook in _hooks:
                hook(module)
            # Later reads find the names here without passing through __getattr__; set only once the
            # hooks have run, so no thread uses pyarrow before they have.
            _deferred.__dict__.update(module.__dict__)
            _imported.append(module)
        return _imported[0]


class _Deferred(ModuleType):
    def __getattr__(self, name: str) -> object:
        return getattr(_load(), name)


_deferred = _Deferred(_NAME)

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = _deferred


def after_import(hook: Callable[[ModuleType], None]) -> None:
    """Run `hook(pyarrow)` once pyarrow is imported through `pa`: now, if it is already."""
    with _lock:
        if not _imported:
            if hook not in _hooks:
                _hooks.append(hook)
            return
    hook(_imported[0])

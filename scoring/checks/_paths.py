"""Reading one value inside a result or a state snapshot: dotted paths and JSON pointers."""

from __future__ import annotations

from typing import Any


def _step(current: Any, part: str) -> tuple[bool, Any]:
    if isinstance(current, dict):
        return (True, current[part]) if part in current else (False, None)
    if isinstance(current, list) and part.isdigit() and int(part) < len(current):
        return True, current[int(part)]
    return False, None


def dotted(value: Any, path: str) -> tuple[bool, Any]:
    """(present, value) at a dotted path; a number steps into a list: `items.0.id`."""
    current = value
    for part in path.split("."):
        present, current = _step(current, part)
        if not present:
            return False, None
    return True, current


def pointer(value: Any, path: str) -> tuple[bool, Any]:
    """(present, value) at a JSON pointer (RFC 6901: `/a/0`, `~1` is `/`, `~0` is `~`); `""` is all."""
    if path == "":
        return True, value
    current = value
    for raw in path[1:].split("/"):
        present, current = _step(current, raw.replace("~1", "/").replace("~0", "~"))
        if not present:
            return False, None
    return True, current

"""The declared conventions this process recognises with: installed by `serve` at start and at each
reload, by the ClickHouse scoring commands before they score, and in each decode worker from what
the server hands it with every request (`ensure`), so every process reads spans alike.

Swapping the one reference is atomic: a span is read wholly with the conventions before a reload or
wholly with those after it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collector.recognise.declared._compiled import Declared

# What a process hands another so it recognises alike: (origin, text) per conventions file.
Sources = tuple[tuple[str, str], ...]


class _InForce:
    declared: Declared | None = None


_IN_FORCE = _InForce()


def install(declared: Declared | None) -> None:
    """Recognise with these conventions from now on (None: with the built-in adapters only)."""
    _IN_FORCE.declared = declared


def current() -> Declared | None:
    return _IN_FORCE.declared


def sources() -> Sources | None:
    """What the conventions in force were compiled from, for a decode worker (None: none in force)."""
    declared = _IN_FORCE.declared
    return declared.sources if declared is not None else None


def ensure(wanted: Sources | None) -> None:
    """In a decode worker: recognise with the conventions compiled from `wanted`, compiling them only
    when they changed (the server validated them already; should they fail here, the last good stay)."""
    declared = _IN_FORCE.declared
    if (declared.sources if declared is not None else None) == wanted:
        return
    if wanted is None:
        install(None)
        return
    from collector.recognise.declared.errors import ConventionsError
    from collector.recognise.declared.files import compile_sources

    try:
        install(compile_sources(list(wanted)))
    except ConventionsError:
        import logging

        logging.getLogger("tracescore.conventions").exception("a decode worker kept its last conventions")

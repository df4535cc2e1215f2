"""Runs whose trace tracescore could not read: no verdict is confident about them (issue #27).

A run with no tool execution fails "run has no tool executions" only when its trace shows tracescore
something it reads: an agent invocation or a model call, so the missing call is a fact of the trace. A
run whose spans all come from instrumentation tracescore does not read (an observability SDK's own
format, a framework's known gap) says nothing about tool calls either way: it gets an `error` verdict
whose reason names the scopes its spans came from (`Unread.reason`, the contract in docs/scoring.md).

Which span is read is recognition's to say, and recognition is the collector's (scoring never imports
it): the collector installs its finder here (`find_unread_with`, collector/store/unread.py), which
reads the runs' stored spans back. Without one (scoring used alone), no run is unread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import duckdb

CONVENTIONS_DOC = "docs/conventions.md"
INTEGRATIONS_DOC = "docs/integrations.md"
# A run's reason names at most this many scopes, the ones with most spans first.
_NAMED_SCOPES = 5


@dataclass(frozen=True, slots=True)
class ScopeSpans:
    """The spans of one instrumentation scope (name and version as the OTLP scope carried them)."""

    name: str
    version: str
    spans: int

    @property
    def label(self) -> str:
        if not self.name:
            return "no scope"
        return f"scope {self.name} {self.version}" if self.version else f"scope {self.name}"


@dataclass(frozen=True, slots=True)
class Unread:
    """A run none of whose spans tracescore read, with the scopes they came from; or (`known_gap` set) a
    run whose model requested tool calls that its instrumentation, a known gap, never records as run."""

    scopes: tuple[ScopeSpans, ...]
    known_gap: str | None = None

    @property
    def reason(self) -> str:
        ordered = sorted(self.scopes, key=lambda s: (-s.spans, s.name, s.version))
        named = [f"{s.label} ({s.spans} span{'' if s.spans == 1 else 's'})" for s in ordered[:_NAMED_SCOPES]]
        rest = len(ordered) - _NAMED_SCOPES
        if rest > 0:
            named.append(f"{rest} more scope{'' if rest == 1 else 's'}")
        listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
        if self.known_gap is not None:
            return (
                f"spans from {listed} record the model's tool requests but no tool execution (a known "
                f"gap: {self.known_gap}): see {INTEGRATIONS_DOC}"
            )
        return f"spans from {listed} are in no convention tracescore reads: see {CONVENTIONS_DOC}"


# run id -> (its trace ids, lowest and highest ingest_seq of its rows), as `load_evidence` ranges them.
RunRanges = Mapping[str, tuple[list[str], int, int]]
# The runs of `ranges` (runs with no execution) that are unread, each with its scopes; `requested` names
# those of them whose model requested a tool call (read, so only a known gap makes them unread).
UnreadFinder = Callable[[duckdb.DuckDBPyConnection, RunRanges, AbstractSet[str]], dict[str, Unread]]

_finder: list[UnreadFinder] = []


def find_unread_with(finder: UnreadFinder) -> None:
    """Install the finder every scoring path asks (the collector's; a second call replaces it)."""
    _finder[:] = [finder]


def unread_runs(
    connection: duckdb.DuckDBPyConnection, ranges: RunRanges, requested: AbstractSet[str] = frozenset()
) -> dict[str, Unread]:
    """The runs of `ranges` (runs with no execution; `requested`: those with a requested call) that
    tracescore could not read."""
    if not ranges or not _finder:
        return {}
    return _finder[0](connection, ranges, requested)

"""Spans stored per instrumentation scope, and how many of them gave tool executions (`/metrics`).

A scope whose spans never give an execution is the first thing to look at when verdicts say "run has
no tool executions" or name the scope in an `error` (docs/conventions.md, "Spans tracescore does not
read"). Counted by the writer after each commit, read by `/metrics` from another thread.

Bounded: at most `MAX_SCOPES` scopes are told apart; spans of any scope first seen after that are
counted under `OTHER`, so a sender inventing scope names cannot grow the server's memory.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from collector.model.arrow import pa

MAX_SCOPES = 1_000
OTHER = ("_other", "")
_FOLD_ROWS = 65_536
_FOLD_BATCHES = 256


@dataclass(frozen=True, slots=True)
class ScopeCount:
    name: str
    version: str
    spans: int
    executing: int  # spans that gave at least one tool execution


class ScopeTally:
    """Batches are kept as they come (their two scope columns, which reference no other column's memory,
    and the flags) and grouped once `_FOLD_ROWS` rows or `_FOLD_BATCHES` batches wait, or when read: one
    Arrow group-by a batch cost ~0.5 ms whatever its size, which many small commits would pay each."""

    def __init__(self, max_scopes: int = MAX_SCOPES) -> None:
        self._max = max_scopes
        self._counts: dict[tuple[str, str], list[int]] = {}
        self._pending: list[tuple[pa.ChunkedArray, pa.ChunkedArray, list[bool]]] = []
        self._pending_rows = 0
        self._lock = threading.Lock()

    def add(self, rows: pa.Table, executing: list[bool]) -> None:
        """Count a committed batch of span rows (the `spans` table's columns) and, row by row, whether
        each span gave an execution."""
        if rows.num_rows == 0:
            return
        with self._lock:
            self._pending.append((rows.column("scope_name"), rows.column("scope_version"), executing))
            self._pending_rows += rows.num_rows
            if self._pending_rows >= _FOLD_ROWS or len(self._pending) >= _FOLD_BATCHES:
                self._fold()

    def _fold(self) -> None:
        if not self._pending:
            return
        names = pa.chunked_array([c for n, _, _ in self._pending for c in n.chunks], pa.string())
        versions = pa.chunked_array([c for _, v, _ in self._pending for c in v.chunks], pa.string())
        flags = [flag for _, _, executing in self._pending for flag in executing]
        self._pending, self._pending_rows = [], 0
        batch = pa.table(
            {
                "name": names.fill_null(""),
                "version": versions.fill_null(""),
                "executing": pa.array(flags, pa.bool_()).cast(pa.int64()),
            }
        )
        sums = [("executing", "count"), ("executing", "sum")]
        # One thread keeps the groups in order of first appearance, which is arrival order: the
        # bound must keep the scopes seen first, and a threaded group-by orders groups as it likes.
        grouped = batch.group_by(["name", "version"], use_threads=False).aggregate(sums)
        for name, version, spans, executions in zip(
            grouped.column("name").to_pylist(),
            grouped.column("version").to_pylist(),
            grouped.column("executing_count").to_pylist(),
            grouped.column("executing_sum").to_pylist(),
            strict=True,
        ):
            key = (name, version)
            if key not in self._counts and len(self._counts) >= self._max:
                key = OTHER
            counts = self._counts.setdefault(key, [0, 0])
            counts[0] += spans
            counts[1] += executions or 0

    def counts(self) -> list[ScopeCount]:
        """Every scope told apart, the most spans first."""
        with self._lock:
            self._fold()
            items = [(key, list(value)) for key, value in self._counts.items()]
        counted = [ScopeCount(name, version, n, executing) for (name, version), (n, executing) in items]
        return sorted(counted, key=lambda c: (-c.spans, c.name, c.version))

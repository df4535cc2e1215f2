"""Open traces in memory until their runs are complete (DESIGN §4: root ended + grace, or idle timeout).

Owned by the writer thread: no locks. A trace that completed is retained for a while so that a late
span re-opens it without reading the database, and a re-sent span is recognised as a duplicate. The
retention is bounded in time and in bytes: at full ingest rate five minutes of spans would take
gigabytes; a trace that left memory is found in the database instead (the writer does that).

The bytes are an estimate, `retained_bytes`, made once a trace completes: fixed costs per span,
execution, requested call and outcome (the records, their slots and the tracker's dict entries,
calibrated with tracemalloc on the bench's workload), plus the sizes of the variable parts, the
arguments (raw text and parsed value), results and the attributes kept for `select`, walked without
`sys.getsizeof` (~1 µs a span). It errs on the high side: measured 1.7 kB a span held against ~2.1 kB
estimated on the bench's workload (bench/README.md).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from collector.model.domain import SpanNode, ToolExecution, ToolOutcome, ToolRequest
from collector.recognise.span import Recognised
from collector.store._resolve import Resolution, resolve_trace


@dataclass(slots=True)
class TraceState:
    trace_id: str
    nodes: dict[str, SpanNode] = field(default_factory=dict)
    executions: dict[tuple[str, int], ToolExecution] = field(default_factory=dict)  # by ToolExecution.key
    requests: dict[tuple[str, int], ToolRequest] = field(default_factory=dict)
    outcomes: list[ToolOutcome] = field(default_factory=list)
    min_seq: int = 0
    max_seq: int = 0
    open_since_seq: int | None = None
    last_seen: float = 0.0
    has_root: bool = False
    is_open: bool = True
    # Whether rows for this trace may already be stored: None = not known yet (new to this process).
    persisted: bool | None = None
    # The seqs its stored rows lie within (executions' and requests' `ingest_seq`, run_traces' `max_seq`):
    # the range a DELETE of them reads, as the tables have no index (collector/store/schema.py, KEYLESS).
    stored_seqs: tuple[int, int] | None = None
    version: int = 0
    completed_at: float = 0.0
    retained_bytes: int = 0  # the estimate counted while it is retained (completed), else 0

    def resolution(self) -> Resolution:
        """Its runs, as what it holds now resolves them (collector/store/_resolve.py)."""
        return resolve_trace(
            self.trace_id, self.nodes, self.executions.values(), self.requests.values(), self.outcomes
        )


# Fixed costs in bytes (tracemalloc, bench workload): a span's node and its entries in the trace's
# dicts; an execution, a requested call and an outcome with their strings of ids and names.
_SPAN_BYTES = 450
_EXECUTION_BYTES = 700
_REQUEST_BYTES = 400
_OUTCOME_BYTES = 400
_STR_BYTES = 50  # a str object's header
_ENTRY_BYTES = 110  # a dict entry with its key
_ITEM_BYTES = 8
_CONTAINER_BYTES = 64
_MAX_DEPTH = 6


def value_bytes(value: Any, depth: int = 0) -> int:
    """Roughly what a parsed JSON value holds in memory."""
    kind = type(value)
    if kind is str:
        return _STR_BYTES + len(value)
    if kind is dict:
        if depth >= _MAX_DEPTH:
            return _CONTAINER_BYTES + _ENTRY_BYTES * len(value)
        return _CONTAINER_BYTES + sum(_ENTRY_BYTES + value_bytes(v, depth + 1) for v in value.values())
    if kind is list or kind is tuple:
        if depth >= _MAX_DEPTH:
            return _CONTAINER_BYTES + _ITEM_BYTES * len(value)
        return _CONTAINER_BYTES + sum(_ITEM_BYTES + value_bytes(v, depth + 1) for v in value)
    return 32  # numbers, booleans, None


def _text_bytes(text: str | None) -> int:
    return _STR_BYTES + len(text) if text is not None else 0


def retained_bytes(state: TraceState) -> int:
    """The estimated memory a completed trace holds while it is retained."""
    size = _SPAN_BYTES * len(state.nodes)
    for node in state.nodes.values():
        if node.attributes_for_select:
            size += value_bytes(node.attributes_for_select)
    for execution in state.executions.values():
        arguments = execution.arguments
        size += _EXECUTION_BYTES + value_bytes(arguments.value) + _text_bytes(arguments.raw)
        size += value_bytes(execution.result) + _text_bytes(execution.error_message)
    for request in state.requests.values():
        arguments = request.arguments
        size += _REQUEST_BYTES + value_bytes(arguments.value) + _text_bytes(arguments.raw)
    for outcome in state.outcomes:
        size += _OUTCOME_BYTES + _text_bytes(outcome.content)
    return size


class Tracker:
    def __init__(
        self, grace_s: float, idle_timeout_s: float, retention_s: float, max_retained_bytes: int
    ) -> None:
        self.grace_s = grace_s
        self.idle_timeout_s = idle_timeout_s
        self.retention_s = retention_s
        self.max_retained_bytes = max_retained_bytes
        self.traces: dict[str, TraceState] = {}
        # Open traces in order of their last span: the ones due are at the front, so finding them costs
        # the due ones, not every trace in memory (completed ones are retained by the thousand).
        self._open: OrderedDict[str, TraceState] = OrderedDict()
        self.retained_spans = 0  # spans of completed traces kept in memory
        self.retained_bytes = 0  # their estimated memory (`retained_bytes`)
        # (trace id, completed_at) in completion order; entries of traces re-opened since are skipped.
        self._completed: deque[tuple[str, float]] = deque()

    def add(self, trace_id: str, item: Recognised, seq: int, now: float) -> tuple[bool, bool]:
        """Record a span. Returns (is_new_span, reopened): a re-sent span changes nothing."""
        state = self.traces.get(trace_id)
        if state is None:
            state = self.traces[trace_id] = TraceState(trace_id, min_seq=seq)
        span_id = item.node.span_id
        if span_id in state.nodes:
            return False, False
        reopened = not state.is_open
        if reopened:
            state.is_open = True
            self._release(state)
        if trace_id in self._open:
            self._open.move_to_end(trace_id)
        else:
            self._open[trace_id] = state
        if state.open_since_seq is None:
            state.open_since_seq = seq
        state.nodes[span_id] = item.node
        for execution in item.executions:
            state.executions[execution.key] = execution
        for request in item.requests:
            state.requests[(span_id, request.position)] = request
        state.outcomes.extend(item.outcomes)
        state.min_seq = min(state.min_seq, seq)
        state.max_seq = max(state.max_seq, seq)
        state.last_seen = now
        state.has_root = state.has_root or item.node.parent_span_id is None
        return True, reopened

    def due(self, now: float, *, force: bool = False) -> list[TraceState]:
        """Open traces whose runs are complete now (all open traces when forced, e.g. at shutdown)."""
        if force:
            return list(self._open.values())
        ready = []
        first_wait = min(self.grace_s, self.idle_timeout_s)
        for state in self._open.values():
            quiet = now - state.last_seen
            if quiet < first_wait:
                break  # every trace after this one saw a span more recently
            if (state.has_root and quiet >= self.grace_s) or quiet >= self.idle_timeout_s:
                ready.append(state)
        return ready

    def next_due_at(self) -> float | None:
        """The earliest moment an open trace can complete (None when none is open)."""
        for state in self._open.values():
            return state.last_seen + min(self.grace_s, self.idle_timeout_s)
        return None

    def completed(self, states: Iterable[TraceState], now: float) -> None:
        for state in states:
            self._open.pop(state.trace_id, None)
            state.is_open = False
            state.persisted = True
            state.stored_seqs = (state.min_seq, state.max_seq)
            state.version += 1
            state.open_since_seq = None
            state.completed_at = now
            state.retained_bytes = retained_bytes(state)
            self.retained_spans += len(state.nodes)
            self.retained_bytes += state.retained_bytes
            self._completed.append((state.trace_id, now))

    def _release(self, state: TraceState) -> None:
        self.retained_spans -= len(state.nodes)
        self.retained_bytes -= state.retained_bytes
        state.retained_bytes = 0

    def evict(self, now: float, max_bytes: int | None = None) -> int:
        """Forget completed traces past the retention period, and the oldest beyond the byte bound
        (`max_bytes` instead of the tracker's own: 0 forgets every completed trace)."""
        bound = self.max_retained_bytes if max_bytes is None else max_bytes
        evicted = 0
        while self._completed:
            trace_id, completed_at = self._completed[0]
            state = self.traces.get(trace_id)
            if state is None or state.is_open or state.completed_at != completed_at:
                self._completed.popleft()  # re-opened (or completed again later): not this entry's
                continue
            if now - completed_at < self.retention_s and self.retained_bytes <= bound:
                break
            self._completed.popleft()
            del self.traces[trace_id]
            self._release(state)
            evicted += 1
        return evicted

    def open_count(self) -> int:
        return len(self._open)

    def replay_floor(self, next_seq: int, excluding: set[str] | frozenset[str] = frozenset()) -> int:
        """Spans at or above this sequence number belong to traces not yet completed (crash replay)."""
        opens = [
            s.open_since_seq
            for s in self._open.values()
            if s.open_since_seq is not None and s.trace_id not in excluding
        ]
        return min(opens) if opens else next_seq

"""Environment state snapshots reported in a run's traces, for `state` checks (issue 21).

A test harness or tool layer that can see the environment reports it at the end of a turn as a span
event named `tracescore.state`, or as a span of that name, whose attribute `tracescore.state.json` is
the snapshot as JSON text (OpenTelemetry attributes hold no nested objects). The run's snapshot is the
latest one in its traces (by the event's time, or the span's end). Read from the stored raw spans,
only when a spec asks, for every run of a batch in one query.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb

STATE_NAME = "tracescore.state"
STATE_ATTRIBUTE = "tracescore.state.json"


@dataclass(frozen=True, slots=True)
class StateSnapshot:
    value: Any  # the snapshot, parsed; the text itself when it is not JSON
    valid: bool  # the text parsed as JSON
    span_id: str
    time_ns: int


StateSource = Callable[[], StateSnapshot | None]


def no_state() -> StateSnapshot | None:
    return None


def _snapshot(text: Any, span_id: str, time_ns: int) -> StateSnapshot | None:
    if not isinstance(text, str):
        return None if text is None else StateSnapshot(text, True, span_id, time_ns)
    try:
        return StateSnapshot(json.loads(text), True, span_id, time_ns)
    except (ValueError, RecursionError):
        return StateSnapshot(text, False, span_id, time_ns)


def snapshots_in(
    span_id: str, name: str, end_ns: int, attributes: Mapping[str, Any], events: Any
) -> list[StateSnapshot]:
    """Every snapshot one stored span carries: the span itself, and its `tracescore.state` events."""
    found = []
    if name == STATE_NAME and STATE_ATTRIBUTE in attributes:
        snapshot = _snapshot(attributes[STATE_ATTRIBUTE], span_id, end_ns)
        if snapshot is not None:
            found.append(snapshot)
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict) or event.get("name") != STATE_NAME:
            continue
        event_attributes = event.get("attributes") or {}
        if isinstance(event_attributes, dict) and STATE_ATTRIBUTE in event_attributes:
            time_ns = int(event.get("time_unix_nano") or end_ns)
            snapshot = _snapshot(event_attributes[STATE_ATTRIBUTE], span_id, time_ns)
            if snapshot is not None:
                found.append(snapshot)
    return found


class StateLoader:
    """Snapshots for the runs of one evidence batch, loaded on first use (a spec asked for them)."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, runs: Mapping[str, tuple[list[str], int, int]]):
        self._connection = connection
        self._runs = runs  # run id → (trace ids, lowest ingest_seq, highest ingest_seq)
        self._by_run: dict[str, StateSnapshot] | None = None

    def for_run(self, run_id: str) -> StateSnapshot | None:
        if self._by_run is None:
            self._by_run = self._load()
        return self._by_run.get(run_id)

    def source(self, run_id: str) -> StateSource:
        return lambda: self.for_run(run_id)

    def _load(self) -> dict[str, StateSnapshot]:
        by_run: dict[str, StateSnapshot] = {}
        if not self._runs:
            return by_run
        trace_ids = sorted({t for traces, _, _ in self._runs.values() for t in traces})
        low = min(lo for _, lo, _ in self._runs.values())
        high = max(hi for _, _, hi in self._runs.values())
        # The text filter keeps the JSON parsing to the few spans that carry a snapshot.
        rows = self._connection.execute(
            "SELECT trace_id, span_id, name, epoch_ns(end_time), ingest_seq, attributes::VARCHAR, "
            "events::VARCHAR FROM spans "
            "WHERE ingest_seq BETWEEN ? AND ? AND trace_id IN (SELECT unnest(?::VARCHAR[])) "
            "AND (name = ? OR contains(events::VARCHAR, ?))",
            [low, high, trace_ids, STATE_NAME, f'"{STATE_NAME}"'],
        ).fetchall()
        runs_of_trace: dict[str, list[str]] = {}
        for run_id, (traces, _, _) in self._runs.items():
            for trace in traces:
                runs_of_trace.setdefault(trace, []).append(run_id)
        for trace_id, span_id, name, end_ns, seq, attributes, events in rows:
            found = snapshots_in(
                span_id, name, int(end_ns or 0), json.loads(attributes or "{}"), json.loads(events or "[]")
            )
            for run_id in runs_of_trace.get(trace_id, []):
                _, lo, hi = self._runs[run_id]
                if not lo <= seq <= hi:
                    continue
                for snapshot in found:
                    current = by_run.get(run_id)
                    if current is None or (snapshot.time_ns, snapshot.span_id) >= (
                        current.time_ns,
                        current.span_id,
                    ):
                        by_run[run_id] = snapshot
        return by_run

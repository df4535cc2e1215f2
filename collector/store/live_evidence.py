"""Evidence for online scoring from the resolution the writer has just committed, not read back.

Reading a just-completed run back from the store cost the scorer three queries and a JSON parse of
every argument, the largest part of scoring a run (bench/README.md). The writer holds the same
executions and requests it has just stored: for a run with no rows in any other trace (the common
case) they are the whole run, field for field what `load_evidence` reads
(tests/collector/store/test_live_evidence.py compares the two). A run that continues over several
traces (an explicit or framework run id reused, a paused run resumed later) is read from the store,
which holds all of it; one index probe a batch tells them apart.

Scoring from ClickHouse builds the same evidence for traces that are complete when read and never
stored (`complete_in_memory`), the writer's tracking and resolution without its store.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import duckdb

from collector.model.domain import Arguments
from collector.model.jsontext import to_json
from collector.recognise.span import Recognised
from collector.store._resolve import Resolution, ResolvedExecution, ResolvedRequest, RunSummary
from collector.store._tracker import Tracker
from scoring.evidence.definitions import DefinitionLoader
from scoring.evidence.reading import unread_runs
from scoring.evidence.run_keys import seq_range, within
from scoring.evidence.runs import Evidence, Execution, Request, Run
from scoring.evidence.state import StateLoader


@dataclass(slots=True)
class LiveRun:
    """One run of a completed trace, as committed."""

    summary: RunSummary
    version: int
    min_seq: int
    max_seq: int
    executions: tuple[ResolvedExecution, ...]
    requests: tuple[ResolvedRequest, ...]
    # Whether the run may have rows in another trace: False only where the writer knows it has none
    # (its id was never stored before, and no other trace completing with it has it).
    maybe_elsewhere: bool = True


def live_runs(
    resolution: Resolution, version: int, min_seq: int, max_seq: int, maybe_elsewhere: set[str] | None = None
) -> tuple[LiveRun, ...]:
    """Every run of one resolved trace, with its executions and requests, as the writer stores them
    (`maybe_elsewhere`: the ids of runs that may have rows in another trace; None: any may)."""
    executions: dict[str, list[ResolvedExecution]] = {}
    requests: dict[str, list[ResolvedRequest]] = {}
    for execution in resolution.executions:
        executions.setdefault(execution.placement.run_id, []).append(execution)
    for request in resolution.requests:
        requests.setdefault(request.placement.run_id, []).append(request)
    return tuple(
        LiveRun(
            summary,
            version,
            min_seq,
            max_seq,
            tuple(executions.get(summary.run_id, ())),
            tuple(requests.get(summary.run_id, ())),
            maybe_elsewhere is None or summary.run_id in maybe_elsewhere,
        )
        for summary in resolution.runs
    )


def complete_in_memory(spans: Iterable[tuple[str, Recognised]]) -> list[LiveRun]:
    """The runs of traces that are complete in these spans and were never stored (scoring from
    ClickHouse): each span (trace id, what recognition read) kept as the writer's tracker keeps it (a
    span sent twice counts once, as first received), each trace resolved as the writer resolves it;
    one version, every row within ingest sequence 0."""
    tracker = Tracker(grace_s=0.0, idle_timeout_s=0.0, retention_s=0.0, max_retained_bytes=0)
    for trace_id, item in spans:
        tracker.add(trace_id, item, 0, 0.0)
    return [run for state in tracker.traces.values() for run in live_runs(state.resolution(), 1, 0, 0, set())]


def spanning_other_traces(connection: duckdb.DuckDBPyConnection, runs: list[LiveRun]) -> set[str]:
    """The ids of these runs that also have stored rows in another trace: only the store holds them
    whole. Asked of run_traces through `run_keys` (scoring/evidence/run_keys.py), and only for the runs
    the writer says may have them (`LiveRun.maybe_elsewhere`: nearly none,
    collector/store/_stored_ids.py), all in one query."""
    own = {r.summary.run_id: r.summary.trace_id for r in runs if r.maybe_elsewhere}
    if not own:
        return set()
    ids = sorted(own)
    condition, bounds = within(seq_range(connection, ids, "run_key"))
    rows = connection.execute(
        f"SELECT run_id, trace_id FROM run_traces WHERE {condition} "
        "AND run_id IN (SELECT unnest(?::VARCHAR[]))",
        [*bounds, ids],
    ).fetchall()
    return {run_id for run_id, trace_id in rows if trace_id != own[run_id]}


def _arguments(arguments: Arguments) -> tuple[object, bool]:
    # As stored: the text as received when it parsed (its value is what reading it back gives), the
    # value's JSON otherwise; absent or unparseable arguments have no value.
    text = arguments.json_text()
    if text is None:
        return None, arguments.raw is None
    if text is arguments.raw:
        return arguments.value, True
    return json.loads(text), True


_STORED_AS_IS = (str, int, bool)


def _as_stored(attributes: dict[str, Any]) -> dict[str, Any]:
    """The run's attributes as reading them back gives: through JSON, unless every value is one JSON
    keeps as it is (the usual case; a NaN, a list or a nested value takes the round trip)."""
    if all(type(v) in _STORED_AS_IS or (type(v) is float and math.isfinite(v)) for v in attributes.values()):
        return dict(attributes)
    return cast(dict[str, Any], json.loads(to_json(attributes) or "{}"))


def _execution(resolved: ResolvedExecution) -> Execution:
    e = resolved.execution
    value, valid = _arguments(resolved.arguments)
    return Execution(
        e.span_id,
        e.tool_name,
        value,
        valid,
        e.error,
        e.paused,
        e.from_history,
        (e.end_ns - e.start_ns) / 1e6,
        resolved.placement.agent_path,
        resolved.call_id,
        start_ns=e.start_ns,
        end_ns=e.end_ns,
        call_id_source=resolved.call_id_source,
        kind=e.kind,
        call_index=e.call_index,
        # The text the store parses (or keeps as a string); `Execution.result` reads both alike.
        result_text=e.result if isinstance(e.result, str) or e.result is None else to_json(e.result),
    )


def _request(resolved: ResolvedRequest) -> Request:
    r = resolved.request
    return Request(
        r.tool_name,
        r.call_id,
        resolved.execution_span_id is not None,
        resolved.placement.agent_path,
        r.span_id,
        r.position,
        resolved.round,
        resolved.execution_span_id,
        r.encoding,
        resolved.execution_call_index,
    )


def live_evidence(connection: duckdb.DuckDBPyConnection, runs: list[LiveRun]) -> list[Evidence]:
    """Evidence for each run, ordered as `load_evidence` orders rows (executions by start then span
    id, requests by request time then position); tool definitions still load from the store, and only
    when a spec asks for them."""
    ranges = {r.summary.run_id: ([r.summary.trace_id], r.min_seq, r.max_seq) for r in runs}
    loader = DefinitionLoader(connection, ranges)
    states = StateLoader(connection, ranges)
    # Runs with no execution may be unread (scoring/evidence/reading.py): their spans are committed, and
    # looked at again (few, where tracescore reads the pipeline).
    unread = unread_runs(
        connection,
        {r.summary.run_id: ranges[r.summary.run_id] for r in runs if not r.executions},
        {r.summary.run_id for r in runs if not r.executions and r.requests},
    )
    evidence = []
    for live in runs:
        s = live.summary
        run = Run(
            run_id=s.run_id,
            trace_id=s.trace_id,
            task_id=s.task_id,
            service_name=s.service_name,
            agent_name=s.agent_name,
            session_id=s.session_id,
            version=live.version,
            attributes=_as_stored(s.attributes),
            root_span_id=s.root_span_id,
        )
        executions = sorted(
            live.executions, key=lambda e: (e.execution.start_ns, e.execution.span_id, e.execution.call_index)
        )
        requests = sorted(live.requests, key=lambda r: (r.request.requested_ns, r.request.position))
        evidence.append(
            Evidence(
                run,
                tuple(_execution(e) for e in executions),
                tuple(_request(r) for r in requests),
                loader.source(s.run_id),
                states.source(s.run_id),
                unread=unread.get(s.run_id),
            )
        )
    return evidence

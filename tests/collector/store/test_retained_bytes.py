"""Completed traces are kept for late and re-sent spans within a byte bound, not a count (issue 17):
the estimate grows with what a trace holds, eviction goes oldest first until the estimate fits, a
re-opened trace stops counting until it completes again, and a writer asked to shed memory (the
budget's refusal mark) forgets them all and checkpoints."""

from __future__ import annotations

import gc
import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import duckdb

from collector.decode.prepare import prepare_spans
from collector.model.domain import Resource, Span
from collector.recognise.span import recognise
from collector.store._tracker import Tracker, retained_bytes
from collector.store.database import open_writer
from collector.store.writer import WriteJob, Writer, WriterSettings
from tests._otlp import new_span_id, new_trace_id

KIB = 1024


def _tool_span(trace_id: str, arguments: dict[str, str], *, root: bool = True) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=new_span_id(),
        parent_span_id=None if root else new_span_id(),
        name="execute_tool lookup",
        kind=1,
        start_ns=1,
        end_ns=2,
        status_code=0,
        status_message="",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.arguments": json.dumps(arguments),
        },
        events=(),
        links=(),
        resource=Resource({"service.name": "agent"}, "", ""),
    )


def _complete(tracker: Tracker, span: Span, now: float) -> None:
    tracker.add(span.trace_id, recognise(span), seq=1, now=now)
    tracker.completed([tracker.traces[span.trace_id]], now)


def test_the_estimate_follows_what_a_trace_holds() -> None:
    tracker = Tracker(0.0, 30.0, 300.0, max_retained_bytes=10 * 1024 * KIB)
    small, large = _tool_span(new_trace_id(), {"q": "x"}), _tool_span(new_trace_id(), {"q": "x" * 50_000})
    _complete(tracker, small, 0.0)
    _complete(tracker, large, 0.0)
    small_bytes = tracker.traces[small.trace_id].retained_bytes
    large_bytes = tracker.traces[large.trace_id].retained_bytes
    assert small_bytes < 4 * KIB
    # The raw text and its parsed value are both held: at least twice the argument's length.
    assert large_bytes > 2 * 50_000
    assert tracker.retained_bytes == small_bytes + large_bytes


def test_the_estimate_is_near_what_python_holds() -> None:
    spans = [_tool_span(new_trace_id(), {"order": f"A-{i}", "note": "n" * (i % 400)}) for i in range(2_000)]
    gc.collect()
    tracemalloc.start()
    tracker = Tracker(0.0, 30.0, 300.0, max_retained_bytes=1 << 40)
    for span in spans:
        _complete(tracker, span, 0.0)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    estimated = sum(retained_bytes(state) for state in tracker.traces.values())
    print(f"held {held} B, estimated {estimated} B for 2,000 one-span traces")
    assert 0.5 * held < estimated < 2.0 * held, (held, estimated)


def test_the_oldest_traces_are_evicted_until_the_bytes_fit() -> None:
    tracker = Tracker(0.0, 30.0, 300.0, max_retained_bytes=150 * KIB)
    small = [_tool_span(new_trace_id(), {"q": str(i)}) for i in range(10)]
    for i, span in enumerate(small):
        _complete(tracker, span, float(i))
    assert tracker.evict(10.0) == 0  # ten small traces fit
    first_large = _tool_span(new_trace_id(), {"q": "x" * 30_000})
    _complete(tracker, first_large, 11.0)
    assert tracker.evict(11.0) == 0  # still within 150 KiB
    second_large = _tool_span(new_trace_id(), {"q": "y" * 30_000})
    _complete(tracker, second_large, 12.0)
    evicted = tracker.evict(12.0)
    # By bytes: one more trace (of eleven) pushed the ten small and the first large one out.
    assert evicted == 11, evicted
    assert set(tracker.traces) == {second_large.trace_id}
    assert tracker.retained_bytes == tracker.traces[second_large.trace_id].retained_bytes <= 150 * KIB
    assert tracker.retained_spans == 1


def test_a_reopened_trace_stops_counting_until_it_completes_again() -> None:
    tracker = Tracker(0.0, 30.0, 300.0, max_retained_bytes=1024 * KIB)
    trace_id = new_trace_id()
    _complete(tracker, _tool_span(trace_id, {"q": "first"}), 0.0)
    assert tracker.retained_bytes > 0
    late = _tool_span(trace_id, {"q": "z" * 10_000}, root=False)
    tracker.add(trace_id, recognise(late), seq=2, now=1.0)  # a late span re-opens it
    assert tracker.retained_bytes == 0 and tracker.retained_spans == 0
    tracker.completed([tracker.traces[trace_id]], 2.0)
    assert tracker.retained_bytes > 2 * 10_000  # counted again, with the late span in it
    assert tracker.retained_spans == 2


def test_shedding_forgets_every_completed_trace_but_no_open_one() -> None:
    tracker = Tracker(0.0, 30.0, 300.0, max_retained_bytes=1024 * KIB)
    done, still_open = _tool_span(new_trace_id(), {"q": "a"}), _tool_span(new_trace_id(), {"q": "b"})
    _complete(tracker, done, 0.0)
    tracker.add(still_open.trace_id, recognise(still_open), seq=2, now=0.0)
    assert tracker.evict(0.0, max_bytes=0) == 1
    assert set(tracker.traces) == {still_open.trace_id} and tracker.retained_bytes == 0


def _wait(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_writer_asked_to_shed_memory_forgets_retained_traces_and_checkpoints(tmp_path: Path) -> None:
    connection = open_writer(tmp_path / "shed.duckdb")
    writer = Writer(connection, WriterSettings(grace_s=0.05, completion_interval_s=0.01))
    spans = [_tool_span(new_trace_id(), {"q": "x" * 1_000}) for _ in range(20)]
    answers: list[BaseException | None] = []
    try:
        writer.start()
        writer.submit(WriteJob(prepare_spans(spans), answers.append))
        _wait(lambda: writer.stats.traces_completed == 20)
        assert writer.retained_trace_bytes > 20 * 2 * 1_000  # kept for late spans, within the bound
        checkpoints = writer.stats.checkpoints
        writer.shed_memory()
        _wait(lambda: writer.retained_trace_bytes == 0 and writer.stats.checkpoints > checkpoints)
        # A late span of a forgotten trace is still recognised as belonging to a completed trace.
        late = _tool_span(spans[0].trace_id, {"q": "late"}, root=False)
        writer.submit(WriteJob(prepare_spans([late]), answers.append))
        _wait(lambda: len(answers) == 2)
    finally:
        writer.stop()
        connection.close()
    assert answers == [None, None]
    with duckdb.connect(str(tmp_path / "shed.duckdb"), read_only=True) as reader:
        assert reader.execute("SELECT count(*) FROM spans").fetchall() == [(21,)]

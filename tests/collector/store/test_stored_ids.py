"""The writer's filters of the trace and run ids in `run_traces` (collector/store/_stored_ids.py): they may
say "maybe" of an id never stored, never "no" of one that was, across their levels, from the file at
start and for what the writer completes since. A late span after a restart still finds its trace's
stored run; a run id seen before, or in two traces completing together, is handed to online scoring as
one that may have rows elsewhere, and a new one as one that has none."""

from __future__ import annotations

import uuid
from pathlib import Path

import duckdb

from collector.model.domain import Span
from collector.store._stored_ids import _SMALLEST_LEVEL, IdFilter, StoredIds
from collector.store.database import open_writer
from tests._otlp import new_span_id, new_trace_id
from tests._spans import domain_span as _span
from tests._writer import writer_run as _writer_run

TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}


def test_every_added_trace_may_be_held_across_levels_and_few_others_are() -> None:
    completed = IdFilter()
    added = [uuid.uuid4().hex for _ in range(3 * _SMALLEST_LEVEL)]  # fills a level and the next
    for trace_id in added:
        completed.add(trace_id)
    assert len(completed._levels) == 2
    assert all(completed.may_hold(t) for t in added)
    # Ids that are not random (a test's counters) spread as well: the hash is Python's, not the id's bits.
    others = [f"{n:032x}" for n in range(50_000)]
    false_maybes = sum(completed.may_hold(t) for t in others)
    assert false_maybes < 0.01 * len(others), false_maybes


def test_a_filter_read_from_the_file_holds_the_runs_of_both_partitions(tmp_path: Path) -> None:
    connection = open_writer(tmp_path / "w.duckdb")
    stored = {"run_traces_p0": [new_trace_id() for _ in range(300)], "run_traces_p1": [new_trace_id()]}
    for table, trace_ids in stored.items():
        connection.execute(
            f"INSERT INTO {table} (run_id, trace_id, root_span_id, status, version, n_spans, n_executions, "
            "n_requests, completed_at, min_seq, max_seq) "
            "SELECT t, t, t, 'complete', 1, 1, 0, 0, now(), 1, 1 FROM unnest(?::VARCHAR[]) AS u(t)",
            [trace_ids],
        )
    completed = StoredIds.read(connection)
    connection.close()
    # Each row's run id is its trace id here: both filters hold them.
    for filter_ in (completed.traces, completed.runs):
        assert all(filter_.may_hold(t) for ids in stored.values() for t in ids)
        assert sum(filter_.may_hold(new_trace_id()) for _ in range(1_000)) < 10


def test_a_late_span_after_a_restart_completes_the_stored_run_again_whole(tmp_path: Path) -> None:
    database = tmp_path / "w.duckdb"
    trace_id, root, first, late = new_trace_id(), new_span_id(), new_span_id(), new_span_id()
    tool = {"name": "execute_tool lookup", "attributes": TOOL}
    _writer_run(database, [[_span(trace_id, root), _span(trace_id, first, root, **tool)]])
    # A new process: the trace is not in memory, and only the filter read from the file says to look.
    _writer_run(database, [[_span(trace_id, late, root, **tool)]])
    with duckdb.connect(str(database), read_only=True) as connection:
        runs = connection.execute(
            "SELECT version, n_executions FROM run_traces WHERE trace_id = ?", [trace_id]
        )
        assert runs.fetchall() == [(2, 2)]
        spans = connection.execute("SELECT count(*) FROM spans WHERE trace_id = ?", [trace_id]).fetchall()
        assert spans == [(3,)]


def _flags(database: Path, batches: list[list[Span]]) -> list[tuple[str, str, bool]]:
    """(run id, trace id, maybe elsewhere) of each run the writer hands to online scoring."""
    handed = _writer_run(database, batches)
    return [(r.summary.run_id, r.summary.trace_id, r.maybe_elsewhere) for t in handed for r in t.runs]


def _run_span(run_id: str) -> Span:
    return _span(new_trace_id(), new_span_id(), attributes={"tracescore.run.id": run_id})


def test_online_scoring_looks_up_only_runs_whose_id_was_stored_or_completes_twice(tmp_path: Path) -> None:
    fresh, resumed, twice_a, twice_b = (_run_span(r) for r in ("fresh", "resumed", "twice", "twice"))
    later = _run_span("resumed")
    database = tmp_path / "w.duckdb"
    flags = _flags(database, [[fresh, resumed, twice_a, twice_b], [later]])
    assert sorted(flags) == sorted(
        [
            ("fresh", fresh.trace_id, False),
            ("resumed", resumed.trace_id, False),  # its other trace was not stored yet
            ("twice", twice_a.trace_id, True),
            ("twice", twice_b.trace_id, True),
            ("resumed", later.trace_id, True),
        ]
    )
    # After a restart the filter read from the file knows the stored ids; a new one is still new.
    again, new = _run_span("fresh"), _run_span("new")
    assert sorted(_flags(database, [[again, new]])) == [
        ("fresh", again.trace_id, True),
        ("new", new.trace_id, False),
    ]

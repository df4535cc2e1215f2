"""`run_keys` (scoring/evidence/run_keys.py) finds runs and traces in `run_traces`, which has no index: it
must hold one row per `run_traces` row, through the writer's first completions, a trace completed again
in the same process, and one completed again after a restart; a run it does not know (rows SQL wrote
itself) is still found, by reading `run_traces` whole."""

from __future__ import annotations

from pathlib import Path

import duckdb

from collector.model.domain import Span
from scoring.evidence.run_keys import seq_range
from scoring.evidence.runs import complete_runs
from tests._otlp import new_span_id, new_trace_id
from tests._spans import domain_span as span
from tests._writer import writer_run

TOOL = {
    "name": "execute_tool lookup",
    "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
}

_UNMATCHED = """
    SELECT count(*) FROM (
        (SELECT run_key, trace_key, max_seq FROM run_keys
         EXCEPT ALL SELECT md5_number_lower(run_id), md5_number_lower(trace_id), max_seq FROM run_traces)
        UNION ALL
        (SELECT md5_number_lower(run_id), md5_number_lower(trace_id), max_seq FROM run_traces
         EXCEPT ALL SELECT run_key, trace_key, max_seq FROM run_keys)
    )"""


def _run(trace_id: str, root: str, run_id: str | None = None) -> Span:
    attributes = {"tracescore.run.id": run_id} if run_id else {}
    return span(trace_id, root, attributes=attributes)


def test_run_keys_follow_run_traces_row_for_row_and_find_every_run(tmp_path: Path) -> None:
    database = tmp_path / "w.duckdb"
    first, second, resumed = new_trace_id(), new_trace_id(), new_trace_id()
    roots = {t: new_span_id() for t in (first, second, resumed)}
    writer_run(
        database,
        [
            [_run(first, roots[first]), span(first, new_span_id(), roots[first], **TOOL)],
            [_run(second, roots[second], "session-run"), span(second, new_span_id(), roots[second], **TOOL)],
            # A late span of a trace this process completed: its rows, and keys, are replaced.
            [span(first, new_span_id(), roots[first], **TOOL)],
            [_run(resumed, roots[resumed], "session-run")],  # the same run, in a second trace
        ],
    )
    # A restart, and a late span of a stored trace: completed again from the file.
    writer_run(database, [[span(second, new_span_id(), roots[second], **TOOL)]])
    with duckdb.connect(str(database), read_only=True) as connection:
        assert connection.execute(_UNMATCHED).fetchall() == [(0,)]
        versions = dict(connection.execute("SELECT trace_id, version FROM run_traces").fetchall())
        assert versions == {first: 2, second: 2, resumed: 1}
        run_ids = [row[0] for row in connection.execute("SELECT DISTINCT run_id FROM run_traces").fetchall()]
        assert len(run_ids) == 2
        for run_id in run_ids:
            assert seq_range(connection, [run_id], "run_key") is not None
            ((run, traces, _, _),) = complete_runs(connection, run_id=run_id)
            assert run.run_id == run_id
        ((session, traces, _, _),) = complete_runs(connection, run_id="session-run")
        assert session.run_id == "session-run"
        assert sorted(traces) == sorted([second, resumed])
        assert seq_range(connection, [first, second], "trace_key") is not None
        assert seq_range(connection, ["never-stored"], "run_key") is None


def test_a_run_that_sql_wrote_without_keys_is_found_by_reading_run_traces(tmp_path: Path) -> None:
    database = tmp_path / "w.duckdb"
    trace_id, root = new_trace_id(), new_span_id()
    writer_run(database, [[_run(trace_id, root), span(trace_id, new_span_id(), root, **TOOL)]])
    with duckdb.connect(str(database)) as connection:
        connection.execute(
            "INSERT INTO run_traces_p0 (run_id, trace_id, root_span_id, status, version, n_spans, "
            "n_executions, n_requests, completed_at, min_seq, max_seq) "
            "VALUES ('imported', 'imported-trace', 'r', 'complete', 1, 1, 0, 0, now(), 0, 0)"
        )
        ((stored,),) = connection.execute(
            "SELECT run_id FROM run_traces WHERE trace_id = ?", [trace_id]
        ).fetchall()
        # The tables no longer hold as many rows: no range, so nothing is looked for in a part only.
        assert seq_range(connection, [stored], "run_key") is None
        found = {r.run_id for r, *_ in complete_runs(connection, run_ids=["imported", stored])}
        assert found == {"imported", stored}

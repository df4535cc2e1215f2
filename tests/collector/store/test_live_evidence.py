"""Online scoring judges a just-completed run from what the writer holds (collector/store/live_evidence.py)
instead of reading it back: that evidence must be exactly what `load_evidence` reads from the store.

Histories go through the real ingest path (recognition, the writer, run completion; tests/_history.py),
the runs the writer hands to online scoring are captured, and both kinds of evidence are compared field
for field, tool definitions included. Runs over several traces must be left to the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collector.store.live_evidence import LiveRun, live_evidence, spanning_other_traces
from collector.store.writer import CompletedTrace
from scoring.evidence.runs import Evidence, complete_runs, load_evidence
from tests._history import Ask, Call, RunPlan, build_history
from tests.scoring.batch.test_batch_parity import PLANS, calls


def _comparable(evidence: Evidence) -> tuple[Any, ...]:
    results = [e.result for e in evidence.executions]  # by value: the texts may be written differently
    return evidence.run, evidence.executions, evidence.requests, dict(evidence.definitions()), results


def _both(path: Path, plans: list[RunPlan]) -> tuple[list[LiveRun], duckdb.DuckDBPyConnection]:
    captured: list[CompletedTrace] = []
    build_history(path, plans, captured.extend)
    return [run for trace in captured for run in trace.runs], duckdb.connect(str(path))


def _assert_same(runs: list[LiveRun], connection: duckdb.DuckDBPyConnection) -> None:
    live = {e.run.run_id: _comparable(e) for e in live_evidence(connection, runs)}
    stored = load_evidence(connection, complete_runs(connection, run_ids=sorted(live)))
    assert len(stored) == len(live) > 0
    for evidence in stored:
        assert live[evidence.run.run_id] == _comparable(evidence), evidence.run.run_id


def test_live_evidence_is_what_the_store_holds(tmp_path: Path) -> None:
    runs, connection = _both(tmp_path / "h.duckdb", PLANS)
    with connection:
        spanning = spanning_other_traces(connection, runs)
        # The one run stored over two traces ("resumed") is judged from the store; every other is live.
        assert spanning == {"resumed"}
        alone = [r for r in runs if r.summary.run_id not in spanning]
        assert len(alone) == len(PLANS) - 2
        # The plans hold errors, pauses, replayed history, nameless and non-JSON arguments, requests
        # with and without executions, agent depths and duplicate keys: each must come through.
        executions = [e for r in alone for e in live_evidence(connection, [r])[0].executions]
        assert {e.error for e in executions} == {e.paused for e in executions} == {True, False}
        assert any(not e.arguments_valid for e in executions)
        assert any(e.from_history for e in executions)
        _assert_same(alone, connection)


def test_run_attributes_read_as_stored(tmp_path: Path) -> None:
    # Values JSON keeps as they are are handed over as they are; others (NaN, lists) as reading gives.
    plans = [
        RunPlan((Call("lookup"),), attributes={"tier": "gold", "n": 3, "ok": True, "ratio": 0.5}),
        RunPlan((Call("lookup"),), attributes={"odd": float("nan"), "tags": ["a", 1], "big": 10**20}),
    ]
    runs, connection = _both(tmp_path / "h.duckdb", plans)
    with connection:
        attributes = [e.run.attributes for e in live_evidence(connection, runs)]
        assert {"tier": "gold", "n": 3, "ok": True, "ratio": 0.5}.items() <= attributes[0].items()
        assert {"odd": "nan", "tags": ["a", 1], "big": 10**20}.items() <= attributes[1].items()
        _assert_same(runs, connection)


def test_tool_definitions_still_load_from_the_store(tmp_path: Path) -> None:
    definitions = (
        '[{"type": "function", "name": "lookup", "description": "find a cutoff", '
        '"parameters": {"type": "object", "properties": {"region": {"type": "string"}}}}]'
    )
    plan = RunPlan(
        (Call("lookup", '{"region": "north"}'), Ask("quote")),
        attributes={"gen_ai.tool.definitions": definitions},
    )
    runs, connection = _both(tmp_path / "h.duckdb", [plan])
    with connection:
        (evidence,) = live_evidence(connection, runs)
        assert set(evidence.definitions()) == {"lookup"}
        _assert_same(runs, connection)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(calls(), min_size=1, max_size=6), depth=st.integers(0, 2))
def test_any_arguments_come_through_as_stored(tmp_path: Path, texts: list[str], depth: int) -> None:
    path = tmp_path / "h.duckdb"
    path.unlink(missing_ok=True)
    plan = RunPlan(
        tuple(Call("quote", text, depth=depth, requested=i % 2 == 0) for i, text in enumerate(texts))
    )
    runs, connection = _both(path, [plan])
    with connection:
        _assert_same(runs, connection)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    results=st.lists(
        st.one_of(
            st.sampled_from(
                ['{"zip": "75001"}', "Sunny, 21 C", '"quoted"', "42", "NaN", "[1, 2]", "", "null"]
            ),
            st.text(max_size=20),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_any_result_reads_the_same_live_and_stored(tmp_path: Path, results: list[str]) -> None:
    """Issue 21: `results` checks read a result as `executions.result` stores it (JSON text is its value,
    any other text a string); the live path must give the same value."""
    path = tmp_path / "h.duckdb"
    path.unlink(missing_ok=True)
    runs, connection = _both(path, [RunPlan(tuple(Call("weather", "{}", result=r) for r in results))])
    with connection:
        _assert_same(runs, connection)
        (evidence,) = live_evidence(connection, runs)
        assert [e.result[0] for e in evidence.executions] == [True] * len(results)

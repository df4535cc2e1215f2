"""Many specs with many selects (issue 17): indexing specs by what they select changes no verdict. The
set-based scorer (SQL and Python specs mixed), `score_runs` and online scoring's path (`SpecSet`) all
give, in the same order, what testing every spec's `select` against every run and judging gives."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from scoring import (
    Spec,
    SpecSet,
    Verdict,
    ensure_verdict_schema,
    judge,
    score_evidence,
    score_history,
    score_runs,
    store_history,
)
from scoring.batch import score
from scoring.batch._plan import not_compiled
from scoring.evidence.runs import complete_runs, load_evidence
from scoring.spec.select import selects
from scoring.verdict.table import VERDICT_PARTITIONS
from tests._history import Call, RunPlan, build_history

TASKS = [f"task-{i}" for i in range(6)]


def _plans() -> list[RunPlan]:
    plans = []
    for i in range(40):
        calls = (Call("lookup", '{"region": "north"}'), Call("quote", "{}", error=i % 5 == 0))
        attributes: dict[str, Any] = {"tier": [1, "1.0", True, "gold"][i % 4]}
        plans.append(RunPlan(calls[: 1 + i % 2], task=TASKS[i % 6] if i % 7 else None, attributes=attributes))
    return plans


def _specs() -> list[Spec]:
    selects_: list[dict[str, Any]] = [
        {},
        *({"task": task} for task in TASKS),
        {"task": TASKS[:3]},
        {"task": "missing"},
        {"tier": 1},
        {"tier": "true"},
        {"tier": ["gold", 1.0]},
        {"tier": True, "task": TASKS[1]},
        {"service.name": "shop"},
        {"service.name": "other"},
    ]
    specs = []
    for i, select in enumerate(selects_):
        checks: dict[str, Any] = {"expected_tools": ["lookup"]}
        if i % 3 == 1:  # judged in Python (the calls check is outside the compiled subset)
            checks = {"calls": {"quote": {"max": 0}}}
        specs.append(Spec.model_validate({"name": f"s{i}", "select": select, **checks}))
    return specs


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("many") / "history.duckdb"
    build_history(path, _plans())
    return path


@pytest.fixture
def connection(history: Path, tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    copy = tmp_path / "copy.duckdb"
    shutil.copy(history, copy)
    con = duckdb.connect(str(copy))
    try:
        yield con
    finally:
        con.close()


def _naive(con: duckdb.DuckDBPyConnection, specs: list[Spec]) -> list[Verdict]:
    """Every spec's select against every run, as scoring did before the index."""
    evidence = load_evidence(con, complete_runs(con))
    return [judge(spec, e) for e in evidence for spec in specs if selects(spec.select, e.run)]


def test_both_paths_are_in_the_mix() -> None:
    compiled = [not_compiled(s) is None for s in _specs()]
    assert any(compiled) and not all(compiled)


@pytest.mark.parametrize("sql_from_runs", [0, 5, score.SQL_FROM_RUNS], ids=["sql", "mixed", "default"])
def test_indexed_scoring_gives_the_naive_verdicts(
    connection: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, sql_from_runs: int
) -> None:
    """SQL for every compiled spec, for those selecting 5 runs or more, and the default (every spec of
    this small history in Python): the same verdicts, in the same order."""
    monkeypatch.setattr(score, "SQL_FROM_RUNS", sql_from_runs)
    specs = _specs()
    naive = _naive(connection, specs)
    assert len({v.spec for v in naive}) > 10  # most specs select some run
    assert list(score_runs(connection, specs)) == naive
    assert list(score_history(connection, specs)) == naive
    indexed = SpecSet(specs)
    online = [
        v for e in load_evidence(connection, complete_runs(connection)) for v in score_evidence(indexed, e)
    ]
    assert online == naive


@pytest.mark.parametrize("sql_from_runs", [0, 5, score.SQL_FROM_RUNS], ids=["sql", "mixed", "default"])
def test_only_sql_specs_and_only_python_specs(
    connection: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch, sql_from_runs: int
) -> None:
    monkeypatch.setattr(score, "SQL_FROM_RUNS", sql_from_runs)
    specs = _specs()
    for part in ([s for s in specs if not_compiled(s) is None], [s for s in specs if not_compiled(s)]):
        assert list(score_history(connection, part)) == _naive(connection, part)
        ensure_verdict_schema(connection)
        for partition in VERDICT_PARTITIONS:
            connection.execute(f"DELETE FROM {partition}")
        assert store_history(connection, part) == len(_naive(connection, part))
        stored = connection.execute("SELECT run_id, spec, label FROM verdicts ORDER BY ALL").fetchall()
        assert stored == sorted((v.run_id, v.spec, v.label) for v in _naive(connection, part))

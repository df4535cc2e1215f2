"""Many compiled specs that differ only in name and `select` are judged by one query (a family,
scoring/batch/_family.py), and every spec's verdicts are exactly those it gets judged alone: the same
JSON text byte for byte as its own query writes, the Python judge's verdicts, the same stored rows.

The history is the parity tests' (every kind of execution); each compiled spec of theirs is copied under
selects of every sort, names with quotes and non-ASCII letters included.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from scoring import Spec, ensure_verdict_schema, score_history, score_runs, store_history, store_verdicts
from scoring.batch import score
from scoring.batch._family import families
from scoring.batch._plan import not_compiled
from tests._history import build_history
from tests.scoring.batch.test_batch_parity import PLANS, SPECS, _stored, assert_same_verdicts

SELECTS: list[dict[str, Any]] = [
    {},
    {"task": ["task-a", "task-h"]},
    {"service.name": "shop", "tier": ["gold", "1"]},
]


def _family_specs() -> list[Spec]:
    """Each compiled parity spec under every select, interleaved so that families are not contiguous."""
    specs = []
    for n, select in enumerate(SELECTS):
        for i, base in enumerate(SPECS):
            data = base.model_dump(mode="json", exclude_none=True, by_alias=True)
            specs.append(Spec.model_validate({**data, "name": f'é-{i}-"{n}"\'', "select": select}))
    return [s for s in specs if not_compiled(s) is None]


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("families") / "history.duckdb"
    build_history(path, PLANS)
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


def test_the_specs_form_families() -> None:
    specs = _family_specs()
    groups = families(specs, range(len(specs)))
    assert len(groups) >= 15 and all(len(g) % len(SELECTS) == 0 for g in groups)


def test_each_spec_of_a_family_gets_the_verdicts_it_gets_alone(connection: duckdb.DuckDBPyConnection) -> None:
    specs = _family_specs()
    together = list(score.score_records(connection, specs))
    assert all(s.judged is None and s.text for s in together)  # every one judged by SQL
    for spec in specs:
        alone = [(s.run_id, s.text) for s in score.score_records(connection, [spec])]
        mine = [(s.run_id, s.text) for s in together if s.spec == spec.name]
        assert mine == alone, spec.name
    assert_same_verdicts(connection, specs)


def test_a_family_selecting_enough_runs_together_is_judged_in_sql(
    connection: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each spec selects fewer runs than `SQL_FROM_RUNS` (alone each would go to the Python judge), the
    family together more: one query judges them, with the Python judge's verdicts."""
    specs = [
        Spec.model_validate({"name": f"t{i}", "select": select, "expected_tools": ["lookup"]})
        for i, select in enumerate([*SELECTS, {"task": "none of them"}])
    ]
    counts = [sum(1 for v in score_runs(connection, [s])) for s in specs]
    monkeypatch.setattr(score, "SQL_FROM_RUNS", max(counts) + 1)
    assert sum(counts) >= score.SQL_FROM_RUNS
    scored = list(score.score_records(connection, specs))
    assert scored and all(s.judged is None for s in scored)
    assert [s.verdict() for s in scored] == list(score_runs(connection, specs))


def test_stored_family_verdicts_equal_what_store_verdicts_writes(history: Path, tmp_path: Path) -> None:
    specs = _family_specs()[::2]  # every other spec: each family keeps members, the test stays short
    stored = []
    for way in ("python", "iterated", "store_history", "again"):
        copy = tmp_path / f"{way}.duckdb"
        shutil.copy(history, copy)
        con = duckdb.connect(str(copy))
        ensure_verdict_schema(con)
        if way == "python":
            count = store_verdicts(con, score_runs(con, specs))
        elif way == "iterated":
            count = sum(1 for _ in score_history(con, specs, store=True))
        elif way == "store_history":
            count = store_history(con, specs)
        else:  # scored twice: the second replaces the first's rows
            store_history(con, specs)
            count = sum(1 for _ in score_history(con, specs, store=True))
        assert count > len(PLANS)
        stored.append(_stored(con))
        con.close()
    assert stored[1] == stored[0]
    assert stored[2] == stored[0]
    assert stored[3] == stored[0]

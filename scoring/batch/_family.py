"""Many compiled specs judged by one query: specs whose checks are the same and that differ only in their
name and `select` (a thousand specs selecting a task each) form a family.

A family's query is one spec's query (scoring/batch/_sql.py) over a table of (run, spec) rows: each run
joined to every spec of the family that selects it, with that spec's position, name and fingerprint.
The facts of a run's executions and requests are folded once, whichever specs select it, and the verdict
names the spec of its row. So a thousand such specs cost one query over the runs they select, where each
would otherwise cost a query (tens of ms whatever its runs) or the Python judge (~0.1 ms a run).

Which runs a spec selects is decided as scoring/batch/_select.py decides it: each distinct combination
of the values `select` reads is judged once in Python (scoring/spec/select.py), then joined to the runs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from scoring.batch._select import _columns
from scoring.spec.select import SelectIndex, run_of_select_values
from scoring.spec.specs import Spec
from scoring.verdict.arrow_view import register_arrow

# What a family's members may differ in: neither changes the query, only which runs it reads and what
# the verdict is called (each spec's own fingerprint is in its rows).
_PER_SPEC = ("name", "select")


def shape(spec: Spec) -> str:
    """What a family's members share: the spec's checks, without its name and select."""
    checks = {k: v for k, v in spec.canonical().items() if k not in _PER_SPEC}
    return json.dumps(checks, sort_keys=True, separators=(",", ":"))


def families(specs: Sequence[Spec], candidates: Sequence[int]) -> list[list[int]]:
    """The positions of `candidates` (compiled specs) grouped by their checks, in order; only groups of
    two or more: one spec alone keeps its own query."""
    by_shape: dict[str, list[int]] = {}
    for position in candidates:
        by_shape.setdefault(shape(specs[position]), []).append(position)
    return [group for group in by_shape.values() if len(group) > 1]


def _text(value: str) -> str:
    """The JSON text the single-spec query writes for a name (scoring/batch/_sql_json.py `constant`)."""
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


class Family:
    """The (run, spec) rows of a family over one relation of runs, in a temporary table of the
    connection: the runs' columns, and `spec_position` (the spec's index in the caller's list),
    `spec_name`, `spec_fingerprint` and their JSON texts."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        runs: str,
        specs: Sequence[Spec],
        positions: Sequence[int],
    ) -> None:
        self.connection = connection
        self.positions = list(positions)
        self.specs = [specs[p] for p in positions]
        self.table = f"_tracescore_family_{uuid.uuid4().hex}"
        self._views: list[str] = []
        parts = self._selected(runs)
        identity = self._register(
            pa.table(
                {
                    "p": pa.array(self.positions, pa.int64()),
                    "spec_name": [s.name for s in self.specs],
                    "spec_name_json": [_text(s.name) for s in self.specs],
                    "spec_fingerprint": [s.fingerprint for s in self.specs],
                    "spec_fingerprint_json": [_text(s.fingerprint) for s in self.specs],
                }
            )
        )
        union = (
            " UNION ALL ".join(parts) if parts else f"SELECT r.*, NULL::BIGINT AS p FROM {runs} r WHERE false"
        )
        connection.execute(
            f"CREATE TEMP TABLE {self.table} AS SELECT c.* EXCLUDE (p), c.p AS spec_position, "
            f"i.spec_name, i.spec_name_json, i.spec_fingerprint, i.spec_fingerprint_json "
            f"FROM ({union}) c JOIN {identity} i ON i.p = c.p"
        )
        self._release_views()
        row = connection.execute(f"SELECT count(*) FROM {self.table}").fetchone()
        self.count = int(row[0]) if row else 0

    def _register(self, table: pa.Table) -> str:
        name = f"_tracescore_family_rows_{uuid.uuid4().hex}"
        register_arrow(self.connection, name, table)
        self._views.append(name)
        return name

    def _release_views(self) -> None:
        for name in self._views:
            self.connection.unregister(name)
        self._views.clear()

    def _selected(self, runs: str) -> list[str]:
        """SELECTs of (the run's columns, p) for each spec's runs: every run for a spec without
        `select`, else the runs whose value combination the spec picks."""
        parts = []
        everything = [p for p, s in zip(self.positions, self.specs, strict=True) if not s.select]
        if everything:
            every = self._register(pa.table({"p": pa.array(everything, pa.int64())}))
            parts.append(f"SELECT r.*, e.p FROM {runs} r CROSS JOIN {every} e")
        by_keys: dict[tuple[str, ...], list[int]] = {}
        for n, spec in enumerate(self.specs):
            if spec.select:
                by_keys.setdefault(tuple(spec.select), []).append(n)
        for keys, members in by_keys.items():
            part = self._picked(runs, keys, members)
            if part is not None:
                parts.append(part)
        return parts

    def _picked(self, runs: str, keys: tuple[str, ...], members: list[int]) -> str | None:
        select_of_keys: dict[str, Any] = dict.fromkeys(keys)
        columns = _columns(select_of_keys, "r")
        combinations = self.connection.execute(
            f"SELECT DISTINCT {', '.join(columns)} FROM {runs} r"
        ).fetchall()
        index = SelectIndex([self.specs[n].select for n in members])
        picked: list[tuple[tuple[Any, ...], int]] = []
        for combination in combinations:
            run = run_of_select_values(select_of_keys, combination)
            picked += [(combination, self.positions[members[m]]) for m in index.selected(run)]
        if not picked:
            return None
        view = self._register(
            pa.table(
                {
                    **{
                        f"c{i}": pa.array([c[i] for c, _ in picked], pa.string()) for i in range(len(columns))
                    },
                    "p": pa.array([p for _, p in picked], pa.int64()),
                }
            )
        )
        same = " AND ".join(f"{column} IS NOT DISTINCT FROM s.c{i}" for i, column in enumerate(columns))
        return f"SELECT r.*, s.p FROM {runs} r JOIN {view} s ON {same}"

    def close(self) -> None:
        self._release_views()
        self.connection.execute(f"DROP TABLE IF EXISTS {self.table}")

"""A spec's `select` over many runs at once, with the very function that judges one run
(scoring/spec/select.py).

`select` compares loosely (`"1"` matches `1`, `True` matches `"true"`, a list means any of), which SQL
would only approximate. The values it reads are few and repeat across runs (a service, a task id), so
each distinct combination is judged once in Python and the runs are joined to the combinations picked.
Many specs share that work (`Chooser`): the combinations are read once per set of keys, and each is
tested only against the specs an index of their `select`s (scoring/spec/select.py) names.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from scoring.batch._sql_match import member
from scoring.spec.select import RUN_FIELD_COLUMNS, SelectIndex, run_of_select_values
from scoring.verdict.arrow_view import register_arrow

# The run's own fields `select` knows by a short name (scoring/spec/select.py), as columns of the runs table.


def _attribute(run: str, key: str) -> str:
    """The JSON text of a run attribute, as `json.loads(attributes).get(key)` reads it (the last of
    duplicates), or NULL."""
    document = f"{run}.attributes"
    keys, values = f"json_keys({document})", f"json_extract({document}, '$.*')"
    return f"(CASE WHEN json_type({document}) = 'OBJECT' THEN {member(keys, values, key)} END)::VARCHAR"


def _columns(select: Mapping[str, Any], run: str) -> list[str]:
    columns = []
    for key in select:
        field = RUN_FIELD_COLUMNS.get(key)
        columns.append(f"{run}.{field}::VARCHAR" if field else "NULL::VARCHAR")
        columns.append(_attribute(run, key))
    return columns


class Chooser:
    """Many specs' `select` over one relation of runs: the distinct value combinations are read once
    per set of keys, and each combination is tested only against the specs that can pick it (an index
    of the specs by what they select, scoring/spec/select.py), not every spec against every run."""

    def __init__(
        self, connection: duckdb.DuckDBPyConnection, runs: str, selects_: Sequence[Mapping[str, Any]]
    ) -> None:
        self.connection, self.runs = connection, runs
        self._selects = list(selects_)
        self._picked: dict[int, list[tuple[Any, ...]]] = {}
        self._everything: set[int] = set()
        self._counts: dict[int, int] = {}  # runs picked, by spec position
        self._total: int | None = None
        by_keys: dict[tuple[str, ...], list[int]] = {}
        for position, select in enumerate(self._selects):
            if select:
                by_keys.setdefault(tuple(select), []).append(position)
        for keys, positions in by_keys.items():
            self._pick(keys, positions)

    def _pick(self, keys: tuple[str, ...], positions: list[int]) -> None:
        """The value combinations each spec selecting on `keys` picks, and how many runs have them."""
        select_of_keys: dict[str, Any] = dict.fromkeys(keys)
        columns = _columns(select_of_keys, "r")
        counted = self.connection.execute(
            f"SELECT {', '.join(columns)}, count(*) FROM {self.runs} r GROUP BY ALL"
        ).fetchall()
        index = SelectIndex([self._selects[p] for p in positions])
        picked: dict[int, list[tuple[Any, ...]]] = {p: [] for p in positions}
        for row in counted:
            combination = tuple(row[:-1])
            for chosen in index.selected(run_of_select_values(select_of_keys, combination)):
                position = positions[chosen]
                picked[position].append(combination)
                self._counts[position] = self._counts.get(position, 0) + int(row[-1])
        for position, some in picked.items():
            if len(some) == len(counted):
                self._everything.add(position)
            else:
                self._picked[position] = some

    def count(self, position: int) -> int:
        """How many runs the spec at `position` picks."""
        if not self._selects[position]:
            if self._total is None:
                row = self.connection.execute(f"SELECT count(*) FROM {self.runs}").fetchone()
                self._total = int(row[0]) if row else 0
            return self._total
        return self._counts.get(position, 0)

    def chosen(self, position: int) -> tuple[str, Callable[[], None]]:
        """A relation of the runs the spec at `position` picks, and what to call when done with it."""
        select = self._selects[position]
        if not select or position in self._everything:
            return self.runs, lambda: None
        picked = self._picked[position]
        if not picked:
            return f"(SELECT * FROM {self.runs} WHERE false)", lambda: None
        columns = _columns(select, "r")
        name = f"_tracescore_select_{uuid.uuid4().hex}"
        table = pa.table(
            {f"c{i}": pa.array([v[i] for v in picked], pa.string()) for i in range(len(columns))}
        )
        register_arrow(self.connection, name, table)
        same = " AND ".join(f"{column} IS NOT DISTINCT FROM s.c{i}" for i, column in enumerate(columns))
        relation = f"(SELECT r.* FROM {self.runs} r WHERE EXISTS (SELECT 1 FROM {name} s WHERE {same}))"

        def release() -> None:
            self.connection.unregister(name)

        return relation, release

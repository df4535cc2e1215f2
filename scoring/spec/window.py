"""Which runs a command looks at, from its command line: `--since`, `--until` and `--where KEY=VALUE`.

- The time window compares the run's start (its earliest span's start, `min(run_traces.start_time)`,
  UTC): a run is in `[since, until)` when it started at or after `since` and before `until`. Start, not
  completion: a run belongs to the window its agent ran in, whether or not it finished before the end
  of it, and re-scoring or a late span never moves it.
- `where` is a `select` (scoring/spec/select.py) written on the command line, and matches exactly as a
  spec's `select` does, with the same function: the run's own fields by their short names (`task`,
  `agent`, `session`, `run`, `service.name`), any other key a resource or root-span attribute
  (`service.version`, `deployment.environment`, a git sha), compared loosely (`1` matches `"1"`,
  `true` matches `True`). Several values of one key mean any of them; several keys must all match.

Values never enter SQL text: the window and the keys are bound as parameters, and `where` is tested in
Python, with `select`'s own function, on each distinct combination of the values it reads (a few, however
many runs share them); the runs of the combinations it picks are then joined back in SQL.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from scoring.spec.select import RUN_FIELD_COLUMNS, run_of_select_values, selected_value, selects


def parse_where(text: str) -> tuple[str, str]:
    """`KEY=VALUE` (split at the first `=`; the value may be empty or hold `=`)."""
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise ValueError(f"expected KEY=VALUE, e.g. service.version=1.4.2, got {text!r}")
    return key.strip(), value


@dataclass(frozen=True, slots=True)
class RunWindow:
    """The runs chosen: started in [since, until) (naive UTC times) and matching `where`."""

    since: datetime | None = None
    until: datetime | None = None
    where: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("--since must be before --until")

    @classmethod
    def of(
        cls,
        since: datetime | None = None,
        until: datetime | None = None,
        where: Sequence[tuple[str, str]] = (),
    ) -> RunWindow:
        grouped: dict[str, tuple[str, ...]] = {}
        for key, value in where:
            if value not in grouped.get(key, ()):
                grouped[key] = (*grouped.get(key, ()), value)
        return cls(since, until, grouped)

    @property
    def everything(self) -> bool:
        return self.since is None and self.until is None and not self.where

    def narrowed(self, key: str, value: str) -> RunWindow:
        """This window, and `key` equal to `value` (replacing any values asked of `key`)."""
        return RunWindow(self.since, self.until, {**self.where, key: (value,)})

    @property
    def select(self) -> dict[str, Any]:
        """`where` as a spec's `select` reads it: a list means any of."""
        return {key: list(values) for key, values in self.where.items()}

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the HTTP API takes (`since`, `until` as ISO 8601 UTC; `where` key → values)."""
        return {
            "since": self.since.isoformat() if self.since is not None else None,
            "until": self.until.isoformat() if self.until is not None else None,
            "where": self.select,
        }


# A run's columns as `select` reads it: its own fields, and its attributes (scoring/spec/select.py).


def _runs(window: RunWindow, task_id: str | None) -> tuple[str, list[Any]]:
    """The complete runs in the time window, one row each, and the query's parameters."""
    having, params = ["bool_and(status = 'complete')"], list[Any]()
    if window.since is not None:
        having.append("min(start_time) >= ?")
        params.append(window.since)
    if window.until is not None:
        having.append("min(start_time) < ?")
        params.append(window.until)
    if task_id is not None:
        having.append("any_value(task_id) = ?")
        params.append(task_id)
    return (
        "SELECT run_id, min(start_time) AS first_start, any_value(task_id) AS task_id, "
        "any_value(service_name) AS service_name, any_value(agent_name) AS agent_name, "
        "any_value(session_id) AS session_id, any_value(attributes) AS attributes "
        f"FROM run_traces GROUP BY run_id HAVING {' AND '.join(having)}"
    ), params


def _keyed(window: RunWindow, keys: Sequence[str], task_id: str | None) -> tuple[str, list[Any]]:
    """The window's runs with, for each key, the run field of that name (or NULL) and the attribute's
    JSON text (the last one stored under it, as `json.loads` reads it; NULL when absent): columns `f{i}`
    and `a{i}`. A run is read once; `select` is then tested on the distinct combinations of these."""
    runs, run_params = _runs(window, task_id)
    columns, params = [], list[Any]()  # the keys' parameters come first: they stand first in the text
    for i, key in enumerate(keys):
        field = RUN_FIELD_COLUMNS.get(key)
        columns.append(f"{field}::VARCHAR AS f{i}" if field else f"NULL::VARCHAR AS f{i}")
        keys_of, values_of = "json_keys(attributes)", "json_extract(attributes, '$.*')"
        columns.append(
            f"(CASE WHEN json_type(attributes) = 'OBJECT' THEN {values_of}[len({keys_of}) + 1 - "
            f"list_position(list_reverse({keys_of}), ?::VARCHAR)] END)::VARCHAR AS a{i}"
        )
        params.append(key)
    selected = ", ".join(["run_id", "first_start", *columns])
    return f"SELECT {selected} FROM ({runs})", [*params, *run_params]


def window_run_ids(
    connection: duckdb.DuckDBPyConnection, window: RunWindow, *, task_id: str | None = None
) -> list[str]:
    """The complete runs the window chooses, by start (then id)."""
    select = window.select
    keyed, params = _keyed(window, list(select), task_id)
    if not select:
        rows = connection.execute(f"SELECT run_id FROM ({keyed}) ORDER BY first_start, run_id", params)
        return [row[0] for row in rows.fetchall()]
    names = [name for i in range(len(select)) for name in (f"f{i}", f"a{i}")]
    # Read once into a temporary table (a read-only connection may hold one): the combinations and the
    # runs of those picked both come from it.
    table = f"_tracescore_window_{uuid.uuid4().hex}"
    connection.execute(f"CREATE TEMP TABLE {table} AS {keyed}", params)
    try:
        combinations = connection.execute(f"SELECT DISTINCT {', '.join(names)} FROM {table}").fetchall()
        picked = [c for c in combinations if selects(select, run_of_select_values(select, c))]
        if not picked:
            return []
        # The combinations picked, one list parameter per column, unnested side by side into rows.
        chosen = ", ".join(f"unnest(?::VARCHAR[]) AS {name}" for name in names)
        same = " AND ".join(f"k.{name} IS NOT DISTINCT FROM c.{name}" for name in names)
        rows = connection.execute(
            f"SELECT k.run_id FROM {table} k SEMI JOIN (SELECT {chosen}) c ON {same} "
            "ORDER BY k.first_start, k.run_id",
            [[c[i] for c in picked] for i in range(len(names))],
        )
        return [row[0] for row in rows.fetchall()]
    finally:
        # After an interrupted query (a server's time limit) the cursor goes, and its table with it.
        with contextlib.suppress(duckdb.Error):
            connection.execute(f"DROP TABLE IF EXISTS {table}")


def chosen_run_ids(
    connection: duckdb.DuckDBPyConnection,
    window: RunWindow | None,
    *,
    run_id: str | None = None,
    task_id: str | None = None,
) -> list[str] | None:
    """The runs a scorer given `run_id`, `task_id` and a window judges, or None when the window chooses
    every run (the scorer's own `run_id` and `task_id` then apply as they always did)."""
    if window is None or window.everything:
        return None
    ids = window_run_ids(connection, window, task_id=task_id)
    return [r for r in ids if r == run_id] if run_id is not None else ids


@dataclass(frozen=True, slots=True)
class GroupValue:
    """One value of a grouping key: how many complete runs in the window have it, and when the first and
    the last of them started."""

    value: str
    n_runs: int
    first_start: datetime
    last_start: datetime


def value_text(value: Any) -> str:
    """A run's value of a key as `--where` and `compare` print and take it: booleans as `true`/`false`,
    anything else as its text, so that `--where KEY=` that text picks the run again."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)  # what `select` compares a wanted text with (scoring/spec/select.py)


def group_values(
    connection: duckdb.DuckDBPyConnection, key: str, window: RunWindow, *, task_id: str | None = None
) -> list[GroupValue]:
    """Every value of `key` among the window's complete runs, the most recently first seen first (latest
    first start, ties by value): a new version comes before the one it replaced."""
    select = window.select
    keys = [*select, key]
    keyed, params = _keyed(window, keys, task_id)
    columns = ", ".join(f"f{i}, a{i}" for i in range(len(keys)))
    combinations = connection.execute(
        f"SELECT {columns}, count(*), min(first_start), max(first_start) FROM ({keyed}) GROUP BY ALL", params
    ).fetchall()
    found: dict[str, list[Any]] = {}
    for row in combinations:
        run = run_of_select_values(keys, row[: 2 * len(keys)])
        value = selected_value(run, key)
        if value is None or (select and not selects(select, run)):
            continue
        n, first, last = row[2 * len(keys) :]
        entry = found.setdefault(value_text(value), [0, first, last])
        entry[0] += n
        entry[1], entry[2] = min(entry[1], first), max(entry[2], last)
    values = [GroupValue(value, n, first, last) for value, (n, first, last) in found.items()]
    values.sort(key=lambda v: v.value)
    values.sort(key=lambda v: v.first_start, reverse=True)
    return values

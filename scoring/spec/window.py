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

Values never enter SQL text: the window is bound as parameters, and `where` is tested in Python on
each candidate run's fields (only runs that have every attribute key named are read).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from scoring.evidence.runs import Run
from scoring.spec.select import selected_value, selects

# The run's own fields a `select` names by a short name (scoring/spec/select.py).
_RUN_FIELDS = ("service.name", "agent", "task", "session", "run")


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


def _candidates(
    connection: duckdb.DuckDBPyConnection, window: RunWindow, keys: Sequence[str], task_id: str | None
) -> list[tuple[Any, ...]]:
    """(run_id, first start, task, service, agent, session, attributes) of the complete runs in the time
    window that have every attribute key `keys` names (a key that is a run field may be either)."""
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
    for key in keys:
        if key not in _RUN_FIELDS:  # a run field may come from the column: its attribute is optional
            having.append("list_contains(json_keys(any_value(attributes)), ?)")
            params.append(key)
    return connection.execute(
        "SELECT run_id, min(start_time), any_value(task_id), any_value(service_name), "
        "any_value(agent_name), any_value(session_id), any_value(attributes)::VARCHAR "
        f"FROM run_traces GROUP BY run_id HAVING {' AND '.join(having)} ORDER BY min(start_time), run_id",
        params,
    ).fetchall()


def _run(row: tuple[Any, ...]) -> Run:
    attributes = json.loads(row[6]) if row[6] else {}
    return Run(
        run_id=row[0],
        trace_id="",
        task_id=row[2],
        service_name=row[3],
        agent_name=row[4],
        session_id=row[5],
        version=0,
        attributes=attributes if isinstance(attributes, dict) else {},
    )


def window_run_ids(
    connection: duckdb.DuckDBPyConnection, window: RunWindow, *, task_id: str | None = None
) -> list[str]:
    """The complete runs the window chooses, by start (then id)."""
    select = window.select
    rows = _candidates(connection, window, list(select), task_id)
    if not select:
        return [row[0] for row in rows]
    return [row[0] for row in rows if selects(select, _run(row))]


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
    rows = _candidates(connection, window, [*select, key], task_id)
    found: dict[str, list[Any]] = {}
    for row in rows:
        run = _run(row)
        if select and not selects(select, run):
            continue
        value = selected_value(run, key)
        if value is None:
            continue
        entry = found.setdefault(value_text(value), [0, row[1], row[1]])
        entry[0] += 1
        entry[1], entry[2] = min(entry[1], row[1]), max(entry[2], row[1])
    values = [GroupValue(value, n, first, last) for value, (n, first, last) in found.items()]
    values.sort(key=lambda v: v.value)
    values.sort(key=lambda v: v.first_start, reverse=True)
    return values

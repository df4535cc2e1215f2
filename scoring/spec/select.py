"""Which runs a spec applies to: its `select` against the run's attributes, and an index of many specs
by what they select, so that a run is tested only against the specs that can pick it."""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from scoring.evidence.runs import Run

# Short names for the run's own fields; any other key is a resource or root-span attribute.
_RUN_FIELDS = {
    "service.name": lambda run: run.service_name,
    "agent": lambda run: run.agent_name,
    "task": lambda run: run.task_id,
    "session": lambda run: run.session_id,
    "run": lambda run: run.run_id,
}


# The same fields as columns of the stored runs (`runs`, `run_traces`): what SQL reads for a key.
RUN_FIELD_COLUMNS = {
    "service.name": "service_name",
    "agent": "agent_name",
    "task": "task_id",
    "session": "session_id",
    "run": "run_id",
}


def run_of_select_values(keys: Iterable[str], values: Sequence[Any]) -> Run:
    """A run holding only what `select` reads of `keys`, from SQL that read, for each key in turn, the
    run field of that name as text (or NULL) and the attribute's JSON text (or NULL): how set-based
    choosers test `select` once per distinct combination of values instead of once per run."""
    fields: dict[str, Any] = dict.fromkeys(RUN_FIELD_COLUMNS.values())
    attributes: dict[str, Any] = {}
    for i, key in enumerate(keys):
        field, attribute = values[2 * i], values[2 * i + 1]
        if key in RUN_FIELD_COLUMNS:
            fields[RUN_FIELD_COLUMNS[key]] = field
        if attribute is not None:
            attributes[key] = json.loads(attribute)
    return Run(
        run_id=fields["run_id"] or "",
        trace_id="",
        task_id=fields["task_id"],
        service_name=fields["service_name"],
        agent_name=fields["agent_name"],
        session_id=fields["session_id"],
        version=0,
        attributes=attributes,
    )


def _equal(wanted: Any, actual: Any) -> bool:
    if actual is None:
        return False
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return wanted is actual or str(wanted).lower() == str(actual).lower()
    return bool(wanted == actual or str(wanted) == str(actual))


def selected_value(run: Run, key: str) -> Any:
    """The value of the run that `select`'s `key` is compared with (None: the run has none)."""
    getter = _RUN_FIELDS.get(key)
    actual = getter(run) if getter else run.attributes.get(key)
    if actual is None and getter is not None:
        actual = run.attributes.get(key)
    return actual


def selects(select: Mapping[str, Any], run: Run) -> bool:
    """Every key must match; a list value means any of its values."""
    for key, wanted in select.items():
        actual = selected_value(run, key)
        options = wanted if isinstance(wanted, list) else [wanted]
        if not any(_equal(option, actual) for option in options):
            return False
    return True


def _index_keys(value: Any) -> list[Hashable]:
    """Keys under which `_equal(wanted, actual)` puts both sides: whenever it holds, `wanted` and
    `actual` share a key (never the converse; the full test follows). Equal text ignoring case covers
    every case but numeric equality of different text (1 and 1.0), which the number itself covers:
    equal numbers hash alike. A bool is never a number here (`_equal` compares bools as text)."""
    keys: list[Hashable] = [str(value).lower()]
    if isinstance(value, int | float) and not isinstance(value, bool):
        keys.append((value,))
    return keys


# The key a spec is filed under when it selects on several: the most telling first.
_PREFERRED = ("run", "task", "session", "agent", "service.name")


def _filing_key(select: Mapping[str, Any]) -> str:
    return next((key for key in _PREFERRED if key in select), next(iter(select)))


class SelectIndex:
    """Specs filed by one key of their `select` and its values; `candidates(run)` are the positions of
    the specs that may select the run (a superset, in spec order), `selected(run)` those that do: the
    same as testing `selects` for every spec, at the cost of the specs that share a value with the run."""

    def __init__(self, selects_: Sequence[Mapping[str, Any]]) -> None:
        self._selects = list(selects_)
        self._everywhere: list[int] = []  # an empty select picks every run
        self._filed: dict[str, dict[Hashable, list[int]]] = {}
        for position, select in enumerate(self._selects):
            if not select:
                self._everywhere.append(position)
                continue
            key = _filing_key(select)
            wanted = select[key]
            by_value = self._filed.setdefault(key, {})
            for option in wanted if isinstance(wanted, list) else [wanted]:
                for index_key in _index_keys(option):
                    filed = by_value.setdefault(index_key, [])
                    if not filed or filed[-1] != position:
                        filed.append(position)

    def candidates(self, run: Run) -> list[int]:
        found: set[int] = set(self._everywhere)
        for key, by_value in self._filed.items():
            actual = selected_value(run, key)
            if actual is None:
                continue
            for index_key in _index_keys(actual):
                found.update(by_value.get(index_key, ()))
        return sorted(found)

    def selected(self, run: Run) -> list[int]:
        return [p for p in self.candidates(run) if selects(self._selects[p], run)]

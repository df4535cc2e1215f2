"""Which runs a spec applies to: its `select` against the run's attributes."""

from __future__ import annotations

from collections.abc import Mapping
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


def _equal(wanted: Any, actual: Any) -> bool:
    if actual is None:
        return False
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return wanted is actual or str(wanted).lower() == str(actual).lower()
    return bool(wanted == actual or str(wanted) == str(actual))


def selects(select: Mapping[str, Any], run: Run) -> bool:
    """Every key must match; a list value means any of its values."""
    for key, wanted in select.items():
        getter = _RUN_FIELDS.get(key)
        actual = getter(run) if getter else run.attributes.get(key)
        if actual is None and getter is not None:
            actual = run.attributes.get(key)
        options = wanted if isinstance(wanted, list) else [wanted]
        if not any(_equal(option, actual) for option in options):
            return False
    return True

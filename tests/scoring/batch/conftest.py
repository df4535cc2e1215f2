"""The parity tests judge small histories: every spec selects fewer runs than the size from which the
batch scorer prefers SQL (`SQL_FROM_RUNS`), so without this each would be judged in Python and the SQL
would go untested. Tests that check the choice itself set the size back."""

from __future__ import annotations

import pytest

from scoring.batch import score


@pytest.fixture(autouse=True)
def sql_for_every_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(score, "SQL_FROM_RUNS", 0)

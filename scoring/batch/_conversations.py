"""Conversation verdicts in a batch: specs with `turns` judge stored conversations after the runs
(scoring/judge/conversation.py), stored as they come when asked. Kept apart from the set-based run
scoring: no conversation check compiles to SQL."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence

import duckdb

from scoring.judge.conversation import score_conversations
from scoring.spec.specs import Spec
from scoring.verdict.record import Verdict
from scoring.verdict.table import store_verdicts

_STORE_EVERY = 500


def conversation_verdicts(
    connection: duckdb.DuckDBPyConnection,
    specs: Sequence[Spec],
    *,
    task_id: str | None,
    store: bool,
    first_turns: Collection[str] | None = None,
) -> Iterator[Verdict]:
    """Every complete conversation's verdicts for the specs with `turns` (only those whose first turn is
    one of `first_turns`, when given); stored before they are yielded."""
    pending: list[Verdict] = []
    for verdict in score_conversations(connection, list(specs), task_id=task_id, first_turns=first_turns):
        pending.append(verdict)
        if len(pending) >= _STORE_EVERY:
            if store:
                store_verdicts(connection, pending)
            yield from pending
            pending = []
    if store and pending:
        store_verdicts(connection, pending)
    yield from pending

"""Conversations for scoring: runs sharing a conversation id, each run a turn, in turn order.

Read from the stored `conversations` view (docs/storage.md, "Conversations"): only conversations whose
every turn is complete, their turns' evidence loaded as `load_evidence` loads any run's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from scoring.evidence.runs import Evidence, complete_runs, load_evidence


@dataclass(slots=True)
class Conversation:
    conversation_id: str
    task_id: str | None
    version: int  # the sum of its turns' versions: grows when a turn is recomputed or added
    turns: tuple[Evidence, ...]  # in turn order


@dataclass(frozen=True, slots=True)
class ConversationRow:
    conversation_id: str
    run_ids: tuple[str, ...]
    task_id: str | None
    version: int


def complete_conversations(
    connection: duckdb.DuckDBPyConnection,
    *,
    conversation_ids: list[str] | None = None,
    task_id: str | None = None,
) -> list[ConversationRow]:
    """Conversations whose every turn is complete, by first start (then id)."""
    where, params = ["status = 'complete'"], list[Any]()
    if conversation_ids is not None:
        where.append("conversation_id IN (SELECT unnest(?::VARCHAR[]))")
        params.append(conversation_ids)
    if task_id is not None:
        where.append("task_id = ?")
        params.append(task_id)
    rows = connection.execute(
        "SELECT conversation_id, run_ids, task_id, version FROM conversations "
        f"WHERE {' AND '.join(where)} ORDER BY start_time, conversation_id",
        params,
    ).fetchall()
    return [ConversationRow(row[0], tuple(row[1]), row[2], int(row[3])) for row in rows]


def load_conversations(
    connection: duckdb.DuckDBPyConnection, rows: list[ConversationRow]
) -> list[Conversation]:
    """Each conversation with its turns' evidence, read in one pass for all of them."""
    if not rows:
        return []
    wanted = sorted({run_id for row in rows for run_id in row.run_ids})
    evidence = {e.run.run_id: e for e in load_evidence(connection, complete_runs(connection, run_ids=wanted))}
    return [
        Conversation(
            row.conversation_id,
            row.task_id,
            row.version,
            tuple(evidence[run_id] for run_id in row.run_ids if run_id in evidence),
        )
        for row in rows
    ]

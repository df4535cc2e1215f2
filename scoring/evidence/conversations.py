"""Conversations for scoring: runs sharing a conversation id, each run a turn, in turn order.

Read from the stored `run_turns` and `run_traces` tables as the `conversations` view reads them
(docs/storage.md, "Conversations"): only conversations whose every turn is complete, their turns'
evidence loaded as `load_evidence` loads any run's.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import duckdb

from scoring.evidence.run_keys import seq_range, within
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
    first_turns: Collection[str] | None = None,
) -> list[ConversationRow]:
    """Conversations whose every turn is complete, by first start (then id); with `first_turns`, only
    those whose first turn (the one a spec's `select` reads) is one of these runs. Two look-ups (the
    turns by conversation id, their runs by run id) rather than the `conversations` view, whose
    grouping DuckDB may plan over every run with its turns."""
    tables = connection.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'run_turns'"
    ).fetchone()
    if not tables or not tables[0]:
        return []  # a file from before schema version 3 (read, not upgraded) recorded no conversation
    where, params = "", list[Any]()
    if conversation_ids is not None:
        where, params = "WHERE conversation_id IN (SELECT unnest(?::VARCHAR[]))", [conversation_ids]
    turns = connection.execute(
        "SELECT conversation_id, run_id, max(turn_index), bool_or(last_turn) FROM run_turns "
        f"{where} GROUP BY conversation_id, run_id",
        params,
    ).fetchall()
    if not turns:
        return []
    run_ids = sorted({row[1] for row in turns})
    condition, bounds = within(seq_range(connection, run_ids, "run_key"), "run_traces.max_seq")
    runs = {
        row[0]: row[1:]
        for row in connection.execute(
            "SELECT run_id, any_value(task_id), min(epoch_ns(start_time)), bool_and(status = 'complete'), "
            "sum(version)::BIGINT FROM (SELECT unnest(?::VARCHAR[]) AS wanted) w "
            f"JOIN run_traces ON run_traces.run_id = w.wanted AND {condition} GROUP BY run_id",
            [run_ids, *bounds],
        ).fetchall()
    }
    by_conversation: dict[str, list[tuple[Any, ...]]] = {}
    for conversation_id, run_id, turn_index, _ in turns:
        if run_id in runs:
            by_conversation.setdefault(conversation_id, []).append((run_id, turn_index, *runs[run_id]))
    found = []
    for conversation_id, members in by_conversation.items():
        if not all(member[4] for member in members):
            continue  # a turn re-opened by a late span: judged when it completes again
        # Turn order: tracescore.turn.index where set (turns without one after), then start, then id.
        members.sort(key=lambda m: (m[1] is None, m[1] or 0, m[3] or 0, m[0]))
        if first_turns is not None and members[0][0] not in first_turns:
            continue
        first = min(members, key=lambda m: (m[3] or 0, m[0]))
        if task_id is not None and first[2] != task_id:
            continue
        version = sum(int(m[5]) for m in members)
        found.append(
            (
                first[3] or 0,
                conversation_id,
                ConversationRow(conversation_id, tuple(m[0] for m in members), first[2], version),
            )
        )
    return [row for _, _, row in sorted(found, key=lambda item: (item[0], item[1]))]


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

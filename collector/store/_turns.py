"""Which conversation a run is a turn of, and where (docs/storage.md, "Conversations"; issue 21)."""

from __future__ import annotations

from typing import Any

CONVERSATION_KEY = "tracescore.conversation.id"
TURN_INDEX_KEY = "tracescore.turn.index"
LAST_TURN_KEY = "tracescore.turn.last"


def conversation_place(
    attributes: dict[str, Any], session_id: str | None
) -> tuple[str | None, int | None, bool]:
    """(conversation id, turn index, last turn marked) of a run: `tracescore.conversation.id`, else its
    session (`session.id`, `gen_ai.conversation.id`, …); an index that is not a whole number is none."""
    given = attributes.get(CONVERSATION_KEY)
    conversation = str(given) if given is not None and given != "" else session_id
    index = attributes.get(TURN_INDEX_KEY)
    if isinstance(index, str) and index.strip().lstrip("-").isdigit():
        index = int(index)
    turn = index if isinstance(index, int) and not isinstance(index, bool) and abs(index) < 2**31 else None
    last = attributes.get(LAST_TURN_KEY)
    return conversation, turn, last is True or (isinstance(last, str) and last.lower() == "true")

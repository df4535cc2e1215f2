"""When a conversation is complete enough to judge online (docs/storage.md, "Conversations").

A conversation is judged once its latest turn completed and either the harness marked that turn the
last (`tracescore.turn.last`) or the grace period passed with no new turn. Each completed turn moves its
conversation's deadline; the scorer thread asks which are due and how long it may sleep.
"""

from __future__ import annotations


class ConversationTimer:
    def __init__(self, grace_s: float) -> None:
        self._grace_s = grace_s
        self._deadlines: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._deadlines)

    def turn_completed(self, conversation_id: str, last: bool, at: float) -> None:
        """A turn of the conversation completed at `at` (monotonic seconds): judge it after the grace
        period, or at once when the turn is marked the last."""
        self._deadlines[conversation_id] = at if last else at + self._grace_s

    def due(self, now: float) -> list[str]:
        """The conversations to judge now, no longer pending."""
        ready = [cid for cid, deadline in self._deadlines.items() if deadline <= now]
        for cid in ready:
            del self._deadlines[cid]
        return ready

    def wait_s(self, now: float, longest: float) -> float:
        """How long the scorer may wait for new work before a conversation falls due."""
        if not self._deadlines:
            return longest
        return max(0.0, min(longest, min(self._deadlines.values()) - now))

    def drain(self) -> list[str]:
        """Every pending conversation (the server stops: its traces were completed, judge what is there)."""
        pending = list(self._deadlines)
        self._deadlines.clear()
        return pending

"""When online scoring judges a conversation (collector/serve/_conversation_timer.py): a grace period
after its latest turn, moved by each new turn; at once when the harness marked the last turn."""

from __future__ import annotations

from collector.serve._conversation_timer import ConversationTimer


def test_a_new_turn_moves_the_moment_and_a_marked_last_turn_is_due_at_once() -> None:
    timer = ConversationTimer(grace_s=2.0)
    timer.turn_completed("a", last=False, at=10.0)
    assert timer.due(11.9) == [] and timer.wait_s(11.0, longest=5.0) == 1.0
    timer.turn_completed("a", last=False, at=11.5)  # another turn within the grace period
    assert timer.due(12.0) == [] and timer.due(13.5) == ["a"]
    assert timer.due(20.0) == [] and len(timer) == 0  # judged once
    timer.turn_completed("b", last=True, at=30.0)
    assert timer.wait_s(30.0, longest=1.0) == 0.0 and timer.due(30.0) == ["b"]


def test_the_wait_never_exceeds_the_poll_and_a_stop_drains_everything() -> None:
    timer = ConversationTimer(grace_s=0.3)
    assert timer.wait_s(0.0, longest=1.0) == 1.0
    timer.turn_completed("a", last=False, at=0.0)
    timer.turn_completed("b", last=False, at=0.1)
    assert timer.wait_s(0.0, longest=1.0) == 0.3
    assert sorted(timer.drain()) == ["a", "b"] and len(timer) == 0

"""The verdict hub cuts off a watcher that falls behind, and marks it so the stream can say so."""

from __future__ import annotations

import asyncio

import pytest

from collector.serve import _hub
from tests._verdicts import passing_verdict


def test_a_watcher_that_falls_behind_is_dropped_and_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub, "_QUEUE_LIMIT", 3)

    async def scenario() -> tuple[bool, int, int, bool]:
        hub = _hub.VerdictHub(asyncio.get_running_loop())
        slow = hub.subscribe()
        picky = hub.subscribe(run_id="r9")
        hub.publish([passing_verdict(f"r{i}") for i in range(5)])  # type: ignore[misc]
        await asyncio.sleep(0.05)
        return slow.overflowed, slow.queue.qsize(), hub.watchers, picky.overflowed

    overflowed, queued, watchers, picky_overflowed = asyncio.run(scenario())
    assert overflowed and queued == 3  # what fitted is still delivered before the stream says why it ends
    assert watchers == 1  # only the watcher that kept up (here: wanted nothing yet) stays subscribed
    assert not picky_overflowed


def test_verdicts_published_before_their_store_are_kept_until_it_commits() -> None:
    async def scenario() -> None:
        hub = _hub.VerdictHub(asyncio.get_running_loop())
        first, second = passing_verdict("r1"), passing_verdict("r2")
        hub.publish([first, second], unstored=True)  # type: ignore[list-item]
        hub.publish([passing_verdict("r3")])  # type: ignore[list-item]  # already stored: not kept
        assert [live.verdict.run_id for live in hub.unstored()] == ["r1", "r2"]
        assert [live.verdict.run_id for live in hub.unstored(run_id="r2")] == ["r2"]
        assert hub.unstored(spec="other") == []

        # The same key judged again (a newer verdict object) before the first store committed: the
        # first store's commit leaves the newer one waiting for its own.
        again = passing_verdict("r1")
        hub.publish([again], unstored=True)  # type: ignore[list-item]
        hub.stored([first, second])  # type: ignore[list-item]
        assert [live.verdict for live in hub.unstored()] == [again]
        hub.stored([again])  # type: ignore[list-item]
        assert hub.unstored() == []

    asyncio.run(scenario())

"""The bytes of requests in flight, as the gate counts them (collector/receive/intake.py), in process.

Requests that do not fit beside those already in wait their turn, first come first served; one alone
always fits; a body that grows as it is read is refused when the growth does not fit; and whatever
becomes of a request (answered, refused while it waited, cancelled after it was let in), its bytes are
given back.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from collector.receive import ingest as ingest_module
from collector.receive.ingest import Ingest
from collector.receive.intake import HELD_PER_BODY_BYTE, Hold, cost_of


def _ingest(limit: int, max_wait_s: float = 2.0) -> tuple[Ingest, Any]:
    writer = SimpleNamespace(backlog_spans=0, healthy=True, stats=SimpleNamespace(last_error=None))
    ingest = Ingest(
        writer,  # type: ignore[arg-type]
        max_backlog_spans=100,
        retry_after_s=1,
        max_wait_s=max_wait_s,
        intake_bytes=limit,
    )
    return ingest, writer


def test_a_request_costs_eight_times_its_body() -> None:
    assert HELD_PER_BODY_BYTE == 8 and cost_of(1000) == 8000 and cost_of(-1) == 0


def test_requests_that_do_not_fit_wait_their_turn_and_get_in_as_bytes_are_given_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ingest_module, "_TICK_S", 60.0)  # the line moves only when the test says so

    async def scenario() -> None:
        ingest, _ = _ingest(limit=100)
        first, second, third = Hold(60), Hold(60), Hold(10)
        assert await ingest.admit(hold=first) is None
        assert ingest.intake.held_bytes == 60
        waiting = asyncio.create_task(ingest.admit(hold=second))
        await asyncio.sleep(0.02)
        newcomer = asyncio.create_task(ingest.admit(hold=third))  # would fit, but someone is waiting
        await asyncio.sleep(0.02)
        assert ingest.waiting == 2 and ingest.intake.held_bytes == 60
        ingest.release(first)
        assert await waiting is None and await newcomer is None
        assert ingest.intake.held_bytes == 70 and (second.held, third.held) == (60, 10)
        ingest.release(second)
        ingest.release(second)  # twice is harmless
        ingest.release(third)
        assert ingest.intake.held_bytes == 0

    asyncio.run(scenario())


def test_one_request_alone_always_fits_and_growth_must_fit_beside_the_others() -> None:
    async def scenario() -> None:
        ingest, _ = _ingest(limit=100)
        huge = Hold(1000)
        assert await ingest.admit(hold=huge) is None  # larger than the limit, but alone
        assert ingest.grow(huge, 500) and huge.held == 1500  # a chunked body read on, still alone
        ingest.release(huge)
        small, growing = Hold(50), Hold(0)
        assert await ingest.admit(hold=small) is None
        assert await ingest.admit(hold=growing) is None  # chunked: nothing announced
        assert ingest.grow(growing, 40)
        assert not ingest.grow(growing, 20)  # 110 > 100 beside the other: refused, nothing counted
        assert ingest.intake.held_bytes == 90
        ingest.release(small)
        ingest.release(growing)
        assert ingest.intake.held_bytes == 0 and ingest.intake.peak_bytes == 1500

    asyncio.run(scenario())


def test_bytes_come_back_from_requests_refused_or_cancelled_in_line() -> None:
    async def scenario() -> None:
        ingest, writer = _ingest(limit=100, max_wait_s=0.1)
        first = Hold(80)
        assert await ingest.admit(hold=first) is None
        late = Hold(80)
        refusal = await ingest.admit(hold=late)  # its turn does not come in time
        assert refusal is not None and "MiB held by requests in flight" in refusal
        assert late.held == 0 and ingest.intake.held_bytes == 80
        ingest2, _ = _ingest(limit=100, max_wait_s=5)
        holder = Hold(80)
        assert await ingest2.admit(hold=holder) is None
        cancelled = Hold(80)
        task = asyncio.create_task(ingest2.admit(hold=cancelled))
        await asyncio.sleep(0.05)
        ingest2.release(holder)  # lets the waiting one in, counting its bytes...
        task.cancel()  # ...but its client is gone before it runs
        try:
            answer = await task
        except asyncio.CancelledError:
            assert cancelled.held == 0  # given back as the cancellation went through
        else:
            # Python 3.11's wait_for keeps a result that came before the cancellation: the request is
            # in, and its receiver's `finally` gives its bytes back once it is answered.
            assert answer is None and cancelled.held == 80
            ingest2.release(cancelled)
        assert ingest2.intake.held_bytes == 0
        waiting = Hold(80)
        blocker = Hold(80)
        assert await ingest2.admit(hold=blocker) is None
        task = asyncio.create_task(ingest2.admit(hold=waiting))
        await asyncio.sleep(0.05)
        task.cancel()  # cancelled while waiting: never counted, and out of the line
        with pytest.raises(asyncio.CancelledError):
            await task
        assert waiting.held == 0 and ingest2.waiting == 0 and ingest2.intake.held_bytes == 80
        writer.healthy = False  # storage failing: everyone in line is refused, and counts nothing
        ingest.release(first)
        assert ingest.intake.held_bytes == 0

    asyncio.run(scenario())

"""What both receivers share: the capacity gate, recognition, and waiting for the commit.

It knows no sockets: receivers turn its answers into gRPC codes or HTTP statuses.

Over the watermark, or when the bytes it would hold do not fit beside those of the requests already in
(collector/receive/intake.py), a request waits its turn, first come first served, before its body is
read (HTTP) or decoded (gRPC), and is refused with a retryable answer only if its turn does not come
in time. A plain refusal is unfair: the exporters just acknowledged refill the queue at once, so one
that was refused is refused again on every retry until its SDK gives up (six attempts in
opentelemetry-python) and drops the spans, although every answer was retryable (measured with
bench/overload.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from collector.decode.pool import Preparer
from collector.decode.prepare import Encoding, PreparedRequest
from collector.receive.intake import Hold, IntakeBytes
from collector.store.writer import StoreUnavailable, WriteJob, Writer


@dataclass(slots=True)
class IngestStats:
    requests: int = 0
    spans_received: int = 0
    spans_rejected: int = 0
    requests_refused: int = 0
    requests_invalid: int = 0
    requests_oversize: int = 0
    spans_own_ignored: int = 0


# How long a request waits for its turn. Waiting keeps its place; a refusal sends its retry to the back
# of the line, so a client with a deadline (gRPC) waits as long as the deadline allows. Without one
# (HTTP), half of OpenTelemetry's default 10 s export timeout, leaving time for a retry.
MAX_WAIT_S = 5.0
MAX_DEADLINE_WAIT_S = 30.0
_ANSWER_MARGIN_S = 0.5  # a refusal must reach the client before its deadline does
_MAX_WAITING_BYTES = 64 * 1024 * 1024  # gRPC bodies, already received, waiting their turn
_MAX_LET_IN = 8  # requests let in from the line and not yet handed to the writer
_LET_IN_LEASE_S = 1.0  # one that never reaches the writer (bad body, client gone) frees its place
_TICK_S = 0.01
# Requests with the decode workers at once: more wait their turn in the line, where the watermark and
# the deadlines apply, rather than in the workers' queue, where nothing pushes back.
_MAX_PREPARING_PER_WORKER = 8
# Without a memory budget: what requests in flight may hold at once (collector/receive/intake.py), the
# cost of one 64 MiB body, so that bodies of the default largest size are taken one at a time.
DEFAULT_INTAKE_BYTES = 512 * 1024 * 1024


@dataclass(slots=True, eq=False)
class _Turn:
    """One request waiting in line, and the bytes it will hold once let in."""

    future: asyncio.Future[None]
    hold: Hold | None


# Set in the request's own context when it was let in from the line, so export() can free its place.
_from_line: contextvars.ContextVar[bool] = contextvars.ContextVar("tracescore_from_line", default=False)


class Ingest:
    def __init__(
        self,
        writer: Writer,
        *,
        max_backlog_spans: int,
        retry_after_s: int,
        max_wait_s: float = MAX_WAIT_S,
        max_deadline_wait_s: float = MAX_DEADLINE_WAIT_S,
        preparer: Preparer | None = None,
        memory_check: Callable[[], str | None] | None = None,
        intake_bytes: int = DEFAULT_INTAKE_BYTES,
    ) -> None:
        """`memory_check` says why memory is too short to take a request now (collector/serve/memory.py);
        `intake_bytes` is what admitted requests may hold at once (collector/receive/intake.py)."""
        self._writer = writer
        self._memory_check = memory_check
        self.preparer = preparer or Preparer(0)
        self._max_preparing = _MAX_PREPARING_PER_WORKER * max(1, self.preparer.workers)
        self._max_backlog = max_backlog_spans
        self._max_wait_s = max_wait_s
        self._max_deadline_wait_s = max_deadline_wait_s
        self.retry_after_s = retry_after_s
        self.stats = IngestStats()
        self._closing_reason: str | None = None
        self._line: deque[_Turn] = deque()
        self.intake = IntakeBytes(intake_bytes)
        self._let_in_at: deque[float] = deque()
        self._waiting_bytes = 0
        self._ticker: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        """Requests waiting their turn."""
        return len(self._line)

    def close(self, reason: str) -> None:
        """From now on every request gets a retryable refusal (shutdown); those in line get it at once."""
        self._closing_reason = reason
        self._let_in()

    def refusing_all(self) -> str | None:
        """Why every request is refused now (shutdown, storage failing, memory spent), or None: what
        `/readyz` answers with."""
        return self._blocked()

    def refusal(self) -> str | None:
        """Why a new request must be refused with a retryable answer now, without waiting its turn."""
        reason = self._blocked()
        if reason is None and self._writer.backlog_spans >= self._max_backlog:
            reason = self._full()
        if reason is not None:
            self.stats.requests_refused += 1
        return reason

    async def admit(
        self, size: int = 0, time_left_s: float | None = None, hold: Hold | None = None
    ) -> str | None:
        """Checked before a request's body is read or decoded: None to go ahead, else why it is refused
        with a retryable answer. Over the watermark, or when its `hold` does not fit, it first waits its
        turn; `size` is what it already holds in memory (a gRPC body), `time_left_s` the client's
        deadline. Once admitted, `hold.wanted` bytes are counted until `release(hold)`."""
        _from_line.set(False)
        reason = self._blocked()
        if reason is None and (self._line or not self._has_room(hold)):
            reason = await self._wait_turn(size, time_left_s, hold)
        elif reason is None and hold is not None:
            self.intake.take(hold, hold.wanted)
        if reason is not None:
            self.stats.requests_refused += 1
        return reason

    def grow(self, hold: Hold, more: int) -> bool:
        """Count `more` bytes for an admitted request (a chunked body read on, a body inflated): False,
        counting nothing, when they do not fit beside the other requests' (refuse it retryably)."""
        if not self.intake.fits(more, own=hold.held):
            return False
        self.intake.take(hold, more)
        return True

    def release(self, hold: Hold) -> None:
        """The request is answered (or gone): its bytes are no longer counted, and the line moves."""
        if hold.held:
            self.intake.give_back(hold)
            if self._line:
                self._let_in()

    def _has_room(self, hold: Hold | None = None) -> bool:
        return (
            self._writer.backlog_spans < self._max_backlog
            and self.preparer.in_flight < self._max_preparing
            and (hold is None or self.intake.fits(hold.wanted))
        )

    def _blocked(self) -> str | None:
        if self._closing_reason is not None:
            return self._closing_reason
        if not self._writer.healthy:
            return f"storage is failing: {self._writer.stats.last_error}"
        if self._memory_check is not None:
            return self._memory_check()
        return None

    def full_reason(self) -> str:
        """The retryable refusal's message when there is no room (a chunked body that outgrew it)."""
        return self._full()

    def _full(self) -> str:
        return (
            f"ingest queue is full ({self._writer.backlog_spans} spans waiting to be committed, "
            f"{self.preparer.in_flight} requests being decoded, "
            f"{self.intake.held_bytes // 1024 // 1024} MiB held by requests in flight, "
            f"{len(self._line)} requests waiting their turn)"
        )

    async def _wait_turn(self, size: int, time_left_s: float | None, hold: Hold | None) -> str | None:
        limit = self._max_wait_s
        if time_left_s is not None:
            limit = min(self._max_deadline_wait_s, time_left_s - _ANSWER_MARGIN_S)
        if limit <= 0 or self._waiting_bytes + size > _MAX_WAITING_BYTES:
            return self._full()
        loop = asyncio.get_running_loop()
        turn = _Turn(loop.create_future(), hold)
        self._line.append(turn)
        self._waiting_bytes += size
        if self._ticker is None or self._ticker.done():
            self._ticker = loop.create_task(self._tick())
        admitted = False
        try:
            await asyncio.wait_for(turn.future, limit)
            reason = self._blocked()  # shutdown or a storage failure may have come while it waited
            admitted = reason is None
        except TimeoutError:
            return self._full()
        finally:
            self._waiting_bytes -= size
            with contextlib.suppress(ValueError):
                self._line.remove(turn)
            if hold is not None and not admitted:
                self.release(hold)  # let in, then refused or cancelled: its bytes were counted
        _from_line.set(True)
        return reason

    def _let_in(self) -> None:
        """Let in the first in line while there is room; a few at a time, since a request's spans only
        count in the backlog once it is decoded and handed to the writer."""
        now = time.monotonic()
        while self._let_in_at and now - self._let_in_at[0] > _LET_IN_LEASE_S:
            self._let_in_at.popleft()
        everyone = self._blocked() is not None  # they are refused at once rather than kept waiting
        while self._line and (
            everyone or (len(self._let_in_at) < _MAX_LET_IN and self._has_room(self._line[0].hold))
        ):
            turn = self._line.popleft()
            if not turn.future.done():
                if turn.hold is not None and not everyone:
                    # Counted as it is let in, so the next in line is weighed beside it.
                    self.intake.take(turn.hold, turn.hold.wanted)
                turn.future.set_result(None)
                self._let_in_at.append(now)

    async def _tick(self) -> None:
        while self._line:
            self._let_in()
            await asyncio.sleep(_TICK_S)

    async def store(self, body: bytes, encoding: Encoding) -> PreparedRequest:
        """Decode the request (raises UndecodableRequest) and store its good spans; returns once they are
        committed (raises StoreUnavailable), with what the answer reports."""
        arrived = time.monotonic()
        prepared = await self.preparer.prepare(body, encoding)
        await self.export(prepared, arrived)
        return prepared

    async def export(self, prepared: PreparedRequest, arrived: float) -> None:
        if _from_line.get():
            _from_line.set(False)
            if self._let_in_at:
                self._let_in_at.popleft()  # its spans count in the backlog from here on
        self.stats.requests += 1
        self.stats.spans_received += prepared.received
        self.stats.spans_rejected += prepared.rejected
        self.stats.spans_own_ignored += prepared.own_ignored
        if not prepared.spans:
            return
        loop = asyncio.get_running_loop()
        committed: asyncio.Future[None] = loop.create_future()

        def done(error: BaseException | None) -> None:
            loop.call_soon_threadsafe(_settle, committed, error)

        self._writer.submit(WriteJob(prepared.spans, done, arrived))
        try:
            await committed
        finally:
            if self._line:
                self._let_in()  # the commit made room


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():  # the client went away; the spans are committed (or not) all the same
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


__all__ = ["Ingest", "IngestStats", "StoreUnavailable"]

"""What both receivers share: the capacity gate, recognition, and waiting for the commit.

It knows no sockets: receivers turn its answers into gRPC codes or HTTP statuses.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from collector._decoded import DecodedRequest
from collector._model import OWN_SCOPE
from collector._recognise import recognise
from collector._writer import StoreUnavailable, WriteJob, Writer


@dataclass(slots=True)
class IngestStats:
    requests: int = 0
    spans_received: int = 0
    spans_rejected: int = 0
    requests_refused: int = 0
    requests_invalid: int = 0
    requests_oversize: int = 0
    spans_own_ignored: int = 0


class Ingest:
    def __init__(self, writer: Writer, *, max_backlog_spans: int, retry_after_s: int) -> None:
        self._writer = writer
        self._max_backlog = max_backlog_spans
        self.retry_after_s = retry_after_s
        self.stats = IngestStats()
        self._closing_reason: str | None = None

    def close(self, reason: str) -> None:
        """From now on every request gets a retryable refusal (shutdown)."""
        self._closing_reason = reason

    def refusal(self) -> str | None:
        """Why a new request must be refused with a retryable answer, checked before its body is read."""
        if self._closing_reason is not None:
            reason = self._closing_reason
        elif self._writer.backlog_spans >= self._max_backlog:
            reason = f"ingest queue is full ({self._writer.backlog_spans} spans waiting to be committed)"
        elif not self._writer.healthy:
            reason = f"storage is failing: {self._writer.stats.last_error}"
        else:
            return None
        self.stats.requests_refused += 1
        return reason

    async def export(self, decoded: DecodedRequest) -> None:
        """Store the request's good spans; returns once they are committed (raises StoreUnavailable)."""
        self.stats.requests += 1
        self.stats.spans_received += len(decoded.spans) + decoded.rejected
        self.stats.spans_rejected += decoded.rejected
        spans = [s for s in decoded.spans if s.resource.scope_name != OWN_SCOPE]
        self.stats.spans_own_ignored += len(decoded.spans) - len(spans)
        if not spans:
            return
        loop = asyncio.get_running_loop()
        committed: asyncio.Future[None] = loop.create_future()

        def done(error: BaseException | None) -> None:
            loop.call_soon_threadsafe(_settle, committed, error)

        recognised = [recognise(span) for span in spans]
        self._writer.submit(WriteJob(spans, recognised, done))
        await committed


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():  # the client went away; the spans are committed (or not) all the same
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


__all__ = ["Ingest", "IngestStats", "StoreUnavailable"]

"""Live verdicts for watchers (the gRPC watch stream, `tracescore watch`): publish from any thread,
consume on the event loop. A watcher that falls too far behind is cut off, never the scorer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from scoring import Verdict
from scoring.verdict.table import verdict_json

_QUEUE_LIMIT = 10_000


@dataclass(slots=True)
class Live:
    """A verdict as it is stored, with its JSON text (encoded once, shared by every watcher)."""

    verdict: Verdict
    text: str


@dataclass(eq=False)
class Subscription:
    spec: str | None
    run_id: str | None
    queue: asyncio.Queue[Live | None] = field(default_factory=lambda: asyncio.Queue(_QUEUE_LIMIT))
    overflowed: bool = False

    def wants(self, verdict: Verdict) -> bool:
        return (self.spec is None or verdict.spec == self.spec) and (
            self.run_id is None or verdict.run_id == self.run_id
        )


class VerdictHub:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._subscriptions: set[Subscription] = set()

    def subscribe(self, spec: str | None = None, run_id: str | None = None) -> Subscription:
        subscription = Subscription(spec or None, run_id or None)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    @property
    def watchers(self) -> int:
        return len(self._subscriptions)

    def publish(self, verdicts: Iterable[Verdict], texts: Iterable[str] | None = None) -> None:
        """Thread-safe: hands the verdicts (with their `verdict_json`, when known) to the event loop."""
        if not self._subscriptions:  # read from another thread: a watcher subscribing now gets the next
            return
        verdicts = list(verdicts)
        if texts is None:
            texts = [verdict_json(v) for v in verdicts]
        batch = [Live(v, t) for v, t in zip(verdicts, texts, strict=True)]
        if batch and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._deliver, batch)

    def close(self) -> None:
        """End every watch stream (shutdown); must run on the event loop."""
        for subscription in list(self._subscriptions):
            with contextlib.suppress(asyncio.QueueFull):
                subscription.queue.put_nowait(None)

    def _deliver(self, batch: list[Live]) -> None:
        for subscription in list(self._subscriptions):
            for live in batch:
                if not subscription.wants(live.verdict):
                    continue
                try:
                    subscription.queue.put_nowait(live)
                except asyncio.QueueFull:
                    subscription.overflowed = True
                    self._subscriptions.discard(subscription)
                    break

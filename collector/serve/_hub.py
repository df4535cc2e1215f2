"""Live verdicts for watchers (the gRPC watch stream, `tracescore watch`): publish from any thread,
consume on the event loop. A watcher that falls too far behind is cut off, never the scorer.

Online verdicts are published before they are stored (collector/serve/_verdict_store.py). The hub keeps
those until their store commits, so a watcher asking for what exists (`existing=true`,
`include_existing`) gets them too: it subscribes, then takes `unstored()`, then reads the store, and a
verdict published before it subscribed is in one of the two (it leaves the hub only after its commit).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from scoring import Verdict
from scoring.verdict.table import verdict_json

_QUEUE_LIMIT = 10_000

Key = tuple[str, str, int]  # (run id, spec, run version): how the store and the watch streams key a verdict


def verdict_key(verdict: Verdict) -> Key:
    return (verdict.run_id, verdict.spec, verdict.run_version)


@dataclass(slots=True)
class Live:
    """A verdict, with the JSON text it is stored as (encoded once, shared by every watcher)."""

    verdict: Verdict
    text: str


@dataclass(eq=False)
class Subscription:
    spec: str | None
    run_id: str | None
    queue: asyncio.Queue[Live | None] = field(default_factory=lambda: asyncio.Queue(_QUEUE_LIMIT))
    overflowed: bool = False

    def wants(self, verdict: Verdict) -> bool:
        return _matches(verdict, self.spec, self.run_id)


def _matches(verdict: Verdict, spec: str | None, run_id: str | None) -> bool:
    return (spec is None or verdict.spec == spec) and (run_id is None or verdict.run_id == run_id)


class VerdictHub:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._subscriptions: set[Subscription] = set()
        # Published, not stored yet: by key, the latest published (the scorer's and the store's threads
        # write it, watch streams on the event loop read it).
        self._unstored: dict[Key, Live] = {}
        self._unstored_lock = threading.Lock()

    def subscribe(self, spec: str | None = None, run_id: str | None = None) -> Subscription:
        subscription = Subscription(spec or None, run_id or None)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    @property
    def watchers(self) -> int:
        return len(self._subscriptions)

    def publish(
        self, verdicts: Iterable[Verdict], texts: Iterable[str] | None = None, *, unstored: bool = False
    ) -> None:
        """Thread-safe: hands the verdicts (with their `verdict_json`, when known) to the event loop.
        `unstored`: they are not stored yet; the hub keeps them for `unstored()` until `stored()`."""
        if not unstored and not self._subscriptions:
            return  # read from another thread: a watcher subscribing now reads them from the store
        verdicts = list(verdicts)
        if texts is None:
            texts = [verdict_json(v) for v in verdicts]
        batch = [Live(v, t) for v, t in zip(verdicts, texts, strict=True)]
        if unstored:
            with self._unstored_lock:
                for live in batch:
                    self._unstored[verdict_key(live.verdict)] = live
        if batch and self._subscriptions and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._deliver, batch)

    def stored(self, verdicts: Iterable[Verdict]) -> None:
        """Thread-safe: these published verdicts are committed (or will not be, by this process)."""
        with self._unstored_lock:
            for verdict in verdicts:
                key = verdict_key(verdict)
                live = self._unstored.get(key)
                if live is not None and live.verdict is verdict:  # not a newer one under the same key
                    del self._unstored[key]

    def unstored(self, spec: str | None = None, run_id: str | None = None) -> list[Live]:
        """Published verdicts whose store has not committed yet, matching the filters, in publish order."""
        with self._unstored_lock:
            return [v for v in self._unstored.values() if _matches(v.verdict, spec or None, run_id or None)]

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

"""Storing online verdicts after they were delivered: on a thread and a cursor of its own, batched, by
DELETE + INSERT only.

Online scoring hands a verdict to watchers, the OTLP export and /metrics as soon as it is judged
(collector/serve/_online.py); storing it follows here, so no verdict waits on a commit or on a
checkpoint that holds one. Whatever is queued when a store begins goes in one transaction, so a slow
commit makes the next batch larger, not the verdicts later.

Delivery is therefore at least once: a verdict delivered but not yet stored when the process dies is
judged again at the next start (collector/serve/_catch_up.py) from the same committed run, so under the
same key (run id, run version, spec fingerprint) and with the same content; consumers dedupe on that
key (docs/reliability.md, promise 8).

Test only: `TRACESCORE_TEST_VERDICT_STORE_DELAY_S` holds each store back that many seconds (a stop cuts
the wait short), so a test can kill the server between delivery and storage without racing it
(tests/collector/serve/test_verdict_at_least_once.py). It is not a setting and nothing else reads it.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from collector.serve._verdict_writes import VerdictWrites
from scoring import Verdict

log = logging.getLogger("tracescore.online")

TEST_DELAY_ENV = "TRACESCORE_TEST_VERDICT_STORE_DELAY_S"
_BATCH_VERDICTS = 5_000


@dataclass(frozen=True, slots=True)
class Delivered:
    """Verdicts already handed on, with their `verdict_json` and, per verdict, when its run completed
    (monotonic seconds; None where no lag is measured: catch-up, conversations)."""

    verdicts: list[Verdict]
    texts: list[str]
    completed_at: list[float | None]
    # Verdicts of run versions this process just completed, which no store can hold yet: inserted
    # without the DELETE of their keys, which reads every stored verdict (~40 ms a million).
    fresh: bool = False


Stored = Callable[[Delivered, bool], None]  # (what was delivered, whether it is now stored)


def _test_delay_s() -> float:
    text = os.environ.get(TEST_DELAY_ENV)
    if not text:
        return 0.0
    try:
        delay_s = max(0.0, float(text))
    except ValueError:
        log.error("%s=%r is not a number of seconds: ignored (it is for tests only)", TEST_DELAY_ENV, text)
        return 0.0
    log.warning("%s=%g: storing verdicts is held back (tests only)", TEST_DELAY_ENV, delay_s)
    return delay_s


class VerdictStore:
    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        on_stored: Stored,
        writes: VerdictWrites | None = None,
    ) -> None:
        self._con = connection
        self._writes = writes or VerdictWrites()
        self._on_stored = on_stored
        self._queue: queue.SimpleQueue[Delivered | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._unstored = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="tracescore-verdict-store", daemon=True)
        self._delay_s = _test_delay_s()

    @property
    def unstored(self) -> int:
        """Verdicts delivered and not stored yet."""
        return self._unstored

    def start(self) -> None:
        self._thread.start()

    def put(self, delivered: Delivered) -> None:
        """Never blocks the caller."""
        if not delivered.verdicts:
            return
        with self._lock:
            self._unstored += len(delivered.verdicts)
        self._queue.put(delivered)

    def stop(self, timeout_s: float = 60.0) -> None:
        """Store what is queued, then stop."""
        self._stopping.set()
        self._queue.put(None)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.error("storing verdicts took over %.0f s; the next start judges the rest again", timeout_s)
        self._con.close()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            batch: list[Delivered] = []
            count = 0
            stop = item is None
            while item is not None:
                batch.append(item)
                count += len(item.verdicts)
                if count >= _BATCH_VERDICTS:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                stop = item is None
            if batch:
                if self._delay_s:
                    self._stopping.wait(self._delay_s)
                self._store(batch, count)
            if stop:
                return

    def _store(self, batch: list[Delivered], count: int) -> None:
        started = time.monotonic()
        try:
            verdicts = [v for d in batch for v in d.verdicts]
            texts = [t for d in batch for t in d.texts]
            self._writes.store(self._con, verdicts, texts, replace=not all(d.fresh for d in batch))
            stored = True
        except Exception:
            stored = False
            log.exception(
                "storing %d delivered verdict(s) failed; the next start judges their runs again", count
            )
        with self._lock:
            self._unstored -= count
        for delivered in batch:
            try:
                self._on_stored(delivered, stored)
            except Exception:
                log.exception("the verdict-stored listener failed")
        took = time.monotonic() - started
        if took >= 1.0:
            log.info("storing %d verdict(s) took %.2f s (delivery did not wait for it)", count, took)

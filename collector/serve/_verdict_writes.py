"""Every verdict the server stores goes through here: under the history export's lock, into the partition no
checkpoint is writing.

Two writers store verdicts: online scoring (`_verdict_store`) and `POST /api/v1/score`. Both hold the
lock from a verdict's `scored_at` to its commit (the history export's horizon waits for it), and both
append to the active partition inside `Partitions.writing()`: a commit into the partition a checkpoint
is writing would be held by it, and hold the writer's commits with it (collector/store/partitions.py).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import duckdb

from collector.store.partitions import Partitions
from scoring import Verdict, store_verdicts


class VerdictWrites:
    def __init__(self, partitions: Partitions | None = None, lock: threading.Lock | None = None) -> None:
        self.lock = lock or threading.Lock()
        self._partitions = partitions

    def store(
        self,
        connection: duckdb.DuckDBPyConnection,
        verdicts: Sequence[Verdict],
        texts: Sequence[str] | None = None,
        *,
        replace: bool = True,
    ) -> int:
        with self.lock:
            if self._partitions is None:
                return store_verdicts(connection, verdicts, texts, replace=replace)
            with self._partitions.writing():
                into = self._partitions.active("verdicts")
                return store_verdicts(connection, verdicts, texts, into=into, replace=replace)

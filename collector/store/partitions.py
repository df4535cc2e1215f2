"""Which partition of each written table the writer appends to, switched just before each checkpoint.

Why (issue 17; collector/store/schema.py, PARTITIONED): until DuckDB 2.1 a checkpoint writing a table
holds every commit that appends to it (duckdb/duckdb#25988). A checkpoint mostly writes what was
appended since the previous one; if the writer turns to the other partition just before, what the
checkpoint writes is a table no commit appends to any more, and the partition commits go to has had
nothing appended since the previous checkpoint wrote it: writing it takes next to nothing.

Each transaction that appends to a partition (the writer's; online scoring's verdicts) is held inside
`writing()`; `switch()` waits for those in flight, so none begun on the old partitions commits while
the checkpoint writes them. Transactions of different threads hold `writing()` at the same time: only a
switch waits for them, never each other. Deleting a key from every partition before inserting it into
the active one keeps keys unique across them; that delete may still wait on a checkpoint (a trace
completed again: a late span or a restart), an append never does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from collector.store.schema import PARTITION_COUNT, partitions


class Partitions:
    def __init__(self) -> None:
        self._active = 0
        self._in_flight = 0
        self._switching = False
        self._changed = threading.Condition()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Held for one transaction: the active partitions do not change meanwhile."""
        with self._changed:
            self._changed.wait_for(lambda: not self._switching)
            self._in_flight += 1
        try:
            yield
        finally:
            with self._changed:
                self._in_flight -= 1
                self._changed.notify_all()

    def switch(self) -> None:
        """From the next transactions on, appends go to the other partition of every table."""
        with self._changed:
            self._switching = True
            try:
                self._changed.wait_for(lambda: self._in_flight == 0)
                self._active = (self._active + 1) % PARTITION_COUNT
            finally:
                self._switching = False
                self._changed.notify_all()

    def active(self, table: str) -> str:
        """The partition of `table` appends go to now (call inside `writing()`)."""
        return partitions(table)[self._active]

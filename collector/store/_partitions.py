"""Which partition of each written table the writer appends to, switched just before each checkpoint.

Why (issue 17; collector/store/schema.py, PARTITIONED): until DuckDB 2.1 a checkpoint writing a table
holds every commit that appends to it (duckdb/duckdb#25988). A checkpoint mostly writes what was
appended since the previous one; if the writer turns to the other partition just before, what the
checkpoint writes is a table no commit appends to any more, and the partition commits go to has had
nothing appended since the previous checkpoint wrote it: writing it takes next to nothing.

The writer holds `writing()` for each of its transactions; `switch()` waits for the one in flight, so
no transaction begun on the old partition commits while the checkpoint writes it. Deleting a key from
every partition before inserting it into the active one keeps keys unique across them; that delete may
still wait on a checkpoint (a trace completed again: a late span or a restart), an append never does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from collector.store.schema import PARTITION_COUNT, partitions


class Partitions:
    def __init__(self) -> None:
        self._active = 0
        self._lock = threading.Lock()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Held by the writer for one transaction: the active partition does not change meanwhile."""
        with self._lock:
            yield

    def switch(self) -> None:
        """From the next transaction on, the writer appends to the other partition of every table."""
        with self._lock:
            self._active = (self._active + 1) % PARTITION_COUNT

    def active(self, table: str) -> str:
        """The partition of `table` appends go to now (call inside `writing()`)."""
        return partitions(table)[self._active]

"""Which trace ids and run ids `run_traces` may hold: Bloom filters kept by the one writer.

Two questions were asked of DuckDB on every batch, and almost always answered "none":
- the writer, per group commit, of the traces new to this process: was any completed before (a
  restart, or a late span after its trace left memory)? ~20 µs a trace through the `trace_id` index,
  15 % of the writer thread's time at 5,000 tool spans/s, where the writer is what the rate waits on;
- online scoring, per batch of completed runs: does any have rows in another trace? A third of the
  scoring thread's busy time (bench/README.md, "Thirteenth session").

A filter answers "certainly not" in ~1-4 µs (one level to five) for nearly all of them; only a "maybe"
(an id that is stored, or ~1 in 10,000 of the others a level) goes to DuckDB, so an answer is never
wrong, only sometimes slower. A "maybe" reads `run_traces`' id column, which has no index
(collector/store/schema.py, KEYLESS): ~20 ms a million runs, so the rate of false ones is what keeps
the look-ups off the writer's time. Measured over a million ids grown from empty (five levels): 474
false "maybe"s in a million others at 24 bits and 6 probes an id, against ~1 % at 16 bits and 4 probes,
which would have put a look-up into nearly every span batch of the bench's load (~500 new traces each).

The filters hold every id stored when the writer started (one scan, ~1.2 µs an id) and each one the
writer stores since; nothing else writes `run_traces` while the server runs. A deleted run leaves its
ids set, which costs a look-up, never a wrong answer. A filter grows by levels: when one holds its
capacity, a new level of twice the size takes the next ids, so nothing is read from the file again and
each level keeps its rate of false "maybe"s. 3 bytes an id when read at start, up to 6 when grown: ~6-12
MB a million runs for the two filters.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

_BITS_PER_ID = 24
_PROBES = 6
_SMALLEST_LEVEL = 1 << 16  # ids: 192 KiB of bits
_SCAN_BATCH = 100_000


class _Level:
    __slots__ = ("bits", "capacity", "count", "size")

    def __init__(self, capacity: int) -> None:
        # Exactly the bits asked for: rounded up to a power of two (a mask instead of a modulo) a level
        # took up to 2.7x more memory, ~8 MB a filter for a million ids at 24 bits an id.
        self.size = capacity * _BITS_PER_ID
        self.bits = bytearray(self.size >> 3)
        self.capacity = capacity
        self.count = 0

    # Probes by double hashing over Python's own string hash: SipHash, so any id spreads evenly (a test's
    # "000…01" as well as a random one), and computed once per str object. The seed differs per process,
    # which is fine: a filter lives and dies with its process.
    def add(self, value: str) -> None:
        digest = hash(value)
        size, bits = self.size, self.bits
        position, step = digest % size, 1 + (digest >> 32) % (size - 1)
        for _ in range(_PROBES):
            bits[position >> 3] |= 1 << (position & 7)
            position = (position + step) % size
        self.count += 1

    def may_hold(self, value: str) -> bool:
        digest = hash(value)
        size, bits = self.size, self.bits
        position, step = digest % size, 1 + (digest >> 32) % (size - 1)
        for _ in range(_PROBES):
            if not bits[position >> 3] >> (position & 7) & 1:
                return False
            position = (position + step) % size
        return True


class IdFilter:
    """A superset of a set of ids: `may_hold` False means certainly not in it."""

    def __init__(self, expected: int = 0) -> None:
        self._levels = [_Level(max(_SMALLEST_LEVEL, 2 * expected))]

    def add(self, value: str) -> None:
        level = self._levels[-1]
        if level.count >= level.capacity:
            level = _Level(2 * level.capacity)
            self._levels.append(level)
        level.add(value)

    def may_hold(self, value: str) -> bool:
        return any(level.may_hold(value) for level in self._levels)

    def maybe(self, values: set[str]) -> set[str]:
        """Those of `values` that may be held (ask DuckDB about these only)."""
        return {v for v in values if self.may_hold(v)}


@dataclass(slots=True)
class StoredIds:
    """The trace ids and run ids of `run_traces` (duplicates, one row per run and trace, set bits once)."""

    traces: IdFilter
    runs: IdFilter

    @classmethod
    def read(cls, connection: duckdb.DuckDBPyConnection) -> StoredIds:
        ((count,),) = connection.execute("SELECT count(*) FROM run_traces").fetchall()
        stored = cls(IdFilter(count), IdFilter(count))
        # Rows, not Arrow batches: an idle server does not import pyarrow (~37 MB, issue 32's idle
        # target). Read to the end: a result left half read would keep its transaction open on the
        # writer's connection (collector/store/writer.py).
        result = connection.execute("SELECT trace_id, run_id FROM run_traces")
        while rows := result.fetchmany(_SCAN_BATCH):
            for trace_id, run_id in rows:
                stored.traces.add(trace_id)
                stored.runs.add(run_id)
        return stored

"""The threads the HTTP API's reads run on, in lanes, so that people's SQL never holds up the rest.

Every read blocks a thread while DuckDB works (up to its 10 s limit). On one shared pool, a handful of
slow `/api/v1/sql` queries took every thread and `/api/v1/runs` waited 9 s behind them. People's SQL
now has a lane of its own with a bounded queue (full: 503 with Retry-After), and the API's own reads
(runs, verdicts, tasks) another; scoring and reports on demand keep asyncio's default pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

SQL_THREADS = 2  # people's queries that run at once
SQL_WAITING = 4  # and that may wait for one of those threads (within their time limit); more: 503
READ_THREADS = 4


class LaneFull(RuntimeError):
    """Every SQL thread is busy and the queue is full: try again shortly."""


class ReadLanes:
    def __init__(
        self, sql_threads: int = SQL_THREADS, sql_waiting: int = SQL_WAITING, read_threads: int = READ_THREADS
    ) -> None:
        self._sql = ThreadPoolExecutor(sql_threads, thread_name_prefix="api-sql")
        self._reads = ThreadPoolExecutor(read_threads, thread_name_prefix="api-read")
        self._sql_slots = sql_threads + sql_waiting
        self._sql_taken = 0  # running or waiting; touched on the event loop only

    async def read(self, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._reads, call)

    async def sql(self, call: Callable[[], T]) -> T:
        if self._sql_taken >= self._sql_slots:
            raise LaneFull(
                f"{self._sql_taken} SQL queries are running or waiting (the most this server takes); "
                "try again shortly"
            )
        self._sql_taken += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._sql, call)
        finally:
            self._sql_taken -= 1

    def close(self) -> None:
        """Stop taking work; a query still running ends by its time limit, on its own thread."""
        self._sql.shutdown(wait=False, cancel_futures=True)
        self._reads.shutdown(wait=False, cancel_futures=True)

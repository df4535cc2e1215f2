"""What the APIs may reach inside a running server, in one place."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import duckdb

from collector.receive.ingest import Ingest
from collector.serve._conventions_source import ConventionsSource
from collector.serve._history_export import HistoryExport
from collector.serve._hub import VerdictHub
from collector.serve._online import OnlineScorer
from collector.serve._spec_source import SpecSource
from collector.serve._verdict_writes import VerdictWrites
from collector.store.writer import Writer


@dataclass(slots=True)
class Services:
    connection: duckdb.DuckDBPyConnection
    writer: Writer
    ingest: Ingest
    specs: SpecSource
    hub: VerdictHub
    online: OnlineScorer | None = None
    draining: bool = field(default=False)
    # Every verdict stored goes through it: the history export's lock, the partition no checkpoint writes.
    verdict_writes: VerdictWrites = field(default_factory=VerdictWrites)
    history: HistoryExport | None = None
    memory_limit_bytes: int | None = None  # the memory budget, when there is one (collector/serve/memory.py)
    started_at: float = field(default_factory=time.time)  # unix time: a restart shows in /metrics
    conventions: ConventionsSource | None = None

    def not_ready_reason(self) -> str | None:
        if self.draining:
            return "shutting down"
        if not self.writer.healthy:
            return f"storage is failing: {self.writer.stats.last_error}"
        # While every OTLP request is refused (memory budget nearly spent), the server is not ready.
        return self.ingest.refusing_all()

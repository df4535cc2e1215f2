"""What the APIs may reach inside a running server, in one place."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import duckdb

from collector.receive.ingest import Ingest
from collector.serve._conventions_source import ConventionsSource
from collector.serve._history_export import HistoryExport
from collector.serve._hub import VerdictHub
from collector.serve._online import OnlineScorer
from collector.serve._spec_source import SpecSource
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
    # Held by every verdict store from its time stamp to its commit (the history export's horizon).
    verdicts_lock: threading.Lock = field(default_factory=threading.Lock)
    history: HistoryExport | None = None
    conventions: ConventionsSource | None = None

    def not_ready_reason(self) -> str | None:
        if self.draining:
            return "shutting down"
        if not self.writer.healthy:
            return f"storage is failing: {self.writer.stats.last_error}"
        # While every OTLP request is refused (memory budget nearly spent), the server is not ready.
        return self.ingest.refusing_all()

"""What the APIs may reach inside a running server, in one place."""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from collector._hub import VerdictHub
from collector._ingest import Ingest
from collector._online import OnlineScorer
from collector._spec_source import SpecSource
from collector._writer import Writer


@dataclass(slots=True)
class Services:
    connection: duckdb.DuckDBPyConnection
    writer: Writer
    ingest: Ingest
    specs: SpecSource
    hub: VerdictHub
    online: OnlineScorer | None = None
    draining: bool = field(default=False)

    def not_ready_reason(self) -> str | None:
        if self.draining:
            return "shutting down"
        if not self.writer.healthy:
            return f"storage is failing: {self.writer.stats.last_error}"
        return None

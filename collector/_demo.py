"""`tracescore demo`: the whole path on the embedded default, with real OTLP traffic.

Starts the sidecar (DuckDB file, loopback ports), drives the scripted shop assistant through a few
tasks with several rollouts each over the real OTLP/gRPC exporter, stops the sidecar (which completes
every run), scores the runs against the demo specs and prints verdicts and per-task pass rates.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import duckdb
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from collector._demo_agent import ROLLOUTS, run_agent
from collector._server import Running, start, stop
from collector._settings import Address, ServeSettings
from scoring import aggregate, ensure_verdict_schema, load_specs, score_runs, store_verdicts
from scoring._format import tasks_text, verdicts_text

DEMO_SPECS = """\
# The demo's specs: edit them and re-run `tracescore score --db {db} --spec {specs}`.
name: same-day-dispatch
select: {{task: same-day-dispatch}}
expected_tools: [lookup_shipping_cutoff, quote_shipping]
arguments:
  quote_shipping: {{region: north, service: priority}}
allow_additional: false      # strict mode: an unexpected tool fails the run
---
name: stock-check
select: {{task: stock-check}}
expected_tools: [check_stock]
latency: {{max_ms: {{check_stock: 200}}}}
---
name: refund
select: {{task: refund}}
expected_tools: [refund_order]
"""


def _free(address: Address) -> Address:
    """The address itself if free, else the same host on a port the system picks (a demo must not fail
    because something already listens on 4317)."""
    with socket.socket(socket.AF_INET6 if ":" in address.host else socket.AF_INET) as probe:
        try:
            probe.bind((address.host, address.port))
            return address
        except OSError:
            probe.bind((address.host, 0))
            return Address(address.host, probe.getsockname()[1])


class _Sidecar:
    """The sidecar on its own event-loop thread, so the demo's agent can run in the foreground."""

    def __init__(self, settings: ServeSettings) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tracescore-demo", daemon=True)
        self._thread.start()
        self.running: Running = asyncio.run_coroutine_threadsafe(start(settings), self._loop).result(60)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(stop(self.running), self._loop).result(120)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def run_demo(db: Path, settings: ServeSettings) -> int:
    for stale in (db, db.with_name(db.name + ".wal")):
        stale.unlink(missing_ok=True)  # the demo's own file, rebuilt each time
    settings = replace(
        settings, db=db, grpc=_free(settings.grpc), http=_free(settings.http), grace_seconds=0.5
    )
    specs_path = db.with_name(db.stem + "-specs.yaml")
    specs_path.write_text(DEMO_SPECS.format(db=db, specs=specs_path))
    specs = load_specs([specs_path])

    print(
        f"tracescore demo: sidecar on OTLP/gRPC {settings.grpc} and OTLP/HTTP {settings.http}, database {db}"
    )
    sidecar = _Sidecar(settings)
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-assistant"}))
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=str(settings.grpc), insecure=True))
    )
    tracer = provider.get_tracer("tracescore.demo")
    started = time.monotonic()
    counts: dict[str, int] = {}
    for rollout in ROLLOUTS:
        counts[rollout.task] = counts.get(rollout.task, 0) + 1
        print(f"  agent run: {rollout.task} #{counts[rollout.task]}: {rollout.story}")
        run_agent(tracer, rollout)
    provider.force_flush()
    provider.shutdown()
    stats = sidecar.running.writer.stats
    sidecar.stop()
    print(
        f"sent {len(ROLLOUTS)} agent runs in {time.monotonic() - started:.1f} s; "
        f"{stats.spans_stored} spans stored, {stats.runs_completed} runs complete\n"
    )

    connection = duckdb.connect(str(db))
    try:
        verdicts = list(score_runs(connection, specs))
        ensure_verdict_schema(connection)
        store_verdicts(connection, verdicts)
    finally:
        connection.close()
    print(verdicts_text(verdicts))
    print()
    print(tasks_text(aggregate(verdicts)))
    per_tool = (
        "SELECT tool_name, count(*) FILTER (WHERE NOT error AND NOT paused) AS clean, "
        "count(*) FILTER (WHERE error) AS errored, count(*) FILTER (WHERE paused) AS paused "
        "FROM executions GROUP BY 1 ORDER BY 1"
    )
    print("\nThe same data, with SQL and the CLI:")
    print(f'  tracescore sql --db {db} "{per_tool}"')
    print(f'  tracescore sql --db {db} "SELECT spec, label, reason FROM verdicts ORDER BY spec"')
    print(f"  tracescore score --db {db} --spec {specs_path} --format json")
    print(f"  tracescore report --db {db} --spec {specs_path}")
    return 0

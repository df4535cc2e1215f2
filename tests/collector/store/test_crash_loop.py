"""Promise 1, acknowledged means committed: a crash loop with the real OpenTelemetry SDK exporter.

The SDK (BatchSpanProcessor + OTLP/gRPC exporter) sends agent traces without pause while the server
is SIGKILLed at a random moment and restarted on the same ports, round after round. At the end every
span the exporter got an acknowledgement for is stored exactly once, and so is every span it was ever
handed: what was refused or left unanswered by a killed server was retried by the exporter itself.

The server also scores every run (one spec) and exports its history as it goes (`--export-dir`, a
window every 0.1 s, so kills land in windows half written too): at the end the Parquet files hold every
stored span and every stored verdict exactly once.

Every span has a unique name, so sent and stored are compared span by span. The exporter's retry budget
(6 attempts, 1-2-4-8-16 s apart within its timeout) is far longer than a restart (about a second), so
nothing may be given up on; if the SDK ever does give up, the test fails and names the spans.

Rounds: 5 here; `make soak` runs 50 (TRACESCORE_CRASH_ROUNDS). TRACESCORE_CRASH_SEED replays a run.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from collector.store.export import OTEL_TRACES, SCORES
from tests._sdk_load import CountingGrpcExporter, Ledger, RecordingExporter
from tests._server import ServeProcess

ROUNDS = int(os.environ.get("TRACESCORE_CRASH_ROUNDS", "5"))
SEED = int(os.environ.get("TRACESCORE_CRASH_SEED", str(time.time_ns() % 1_000_000)))
TOOLS_PER_TRACE = 3
TRACE_INTERVAL_S = 0.01  # ~400 spans/s: enough that every kill lands among requests in flight
MAX_UP_S = 1.0  # after the restarted server acknowledged something, it is killed within this
PROGRESS_TIMEOUT_S = 45.0  # the exporter's whole retry budget (60 s timeout) must not be spent

AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "crash-loop"}
TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}


class Generator:
    """An application producing agent traces, each span named uniquely, until told to stop."""

    def __init__(self, provider: TracerProvider) -> None:
        self._tracer = provider.get_tracer("tests.crash_loop")
        self.names: list[str] = []
        self.traces = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="span-generator", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            n = self.traces
            root_name = f"t{n}-agent"
            with self._tracer.start_as_current_span(root_name, attributes=AGENT):
                for k in range(TOOLS_PER_TRACE):
                    name = f"t{n}-tool{k}"
                    with self._tracer.start_as_current_span(name, attributes=TOOL):
                        pass
                    self.names.append(name)
            self.names.append(root_name)
            self.traces += 1
            self._stop.wait(TRACE_INTERVAL_S)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProcess]:
    # Checkpoints every second, so kills also land during checkpoints, not only between commits.
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: lookup\nexpected_tools: [lookup]\n")
    process = ServeProcess(
        tmp_path / "crash.duckdb",
        extra_args=("--specs", str(spec), "--export-dir", str(tmp_path / "history"), "--export-every", "0.1"),
        env={"TRACESCORE_CHECKPOINT_SECONDS": "1"},
    )
    try:
        yield process.start()
    finally:
        process.kill()


@pytest.mark.timeout(120 + 8 * ROUNDS)
def test_every_acknowledged_span_survives_a_crash_loop_exactly_once(server: ServeProcess) -> None:
    rng = random.Random(SEED)
    ledger = Ledger()
    provider = TracerProvider(resource=Resource.create({"service.name": "crash-loop"}))
    grpc_exporter = CountingGrpcExporter(endpoint=server.grpc_endpoint, insecure=True, timeout=60)
    exporter = RecordingExporter(grpc_exporter, ledger)
    # A queue no burst can fill: spans the SDK drops before exporting would prove nothing about us.
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter, max_queue_size=1_000_000, schedule_delay_millis=50, max_export_batch_size=200
        )
    )
    generator = Generator(provider)
    kills: list[float] = []
    generator.start()
    try:
        for _ in range(ROUNDS):
            # Kill only after the restarted server acknowledged something: the exporter always makes
            # progress, so its retry budget cannot run out however many rounds there are.
            target = len(ledger.acked) + 1
            assert ledger.wait_for_acks(target, PROGRESS_TIMEOUT_S), (
                f"no acknowledgement within {PROGRESS_TIMEOUT_S} s of a restart (seed {SEED})\n{server.log()}"
            )
            up = rng.uniform(0, MAX_UP_S)
            time.sleep(up)
            server.kill()
            kills.append(up)
            server.start()
    finally:
        generator.stop()
    assert provider.force_flush(120_000), "the SDK could not flush what it still held"
    provider.shutdown()
    assert server.stop() == 0, server.log()

    generated = set(generator.names)
    assert len(generated) == len(generator.names)
    rows = server.query("SELECT name, count(*) FROM spans GROUP BY name")
    stored = dict(rows)
    duplicated = sorted(name for name, count in stored.items() if count > 1)
    print(
        f"\ncrash loop (seed {SEED}): {len(kills)} SIGKILLs, {len(generated)} spans generated, "
        f"{len(ledger.handed)} handed to the exporter, {len(ledger.acked)} acknowledged, "
        f"{len(ledger.gave_up)} given up by the SDK, export attempts {dict(grpc_exporter.attempts)}, "
        f"{sum(stored.values())} rows stored ({len(stored)} distinct), {len(duplicated)} duplicated"
    )
    assert not duplicated, f"stored more than once: {duplicated[:20]} (seed {SEED})"
    assert not generated - ledger.handed, "the SDK dropped spans before exporting them (queue full)"
    assert not ledger.gave_up, (
        f"the SDK gave up on {len(ledger.gave_up)} span(s) after its retries: {sorted(ledger.gave_up)[:20]}"
    )
    lost = sorted(ledger.acked - stored.keys())
    assert not lost, f"acknowledged but not stored: {lost[:20]} (seed {SEED})"
    missing, unexpected = sorted(generated - stored.keys()), sorted(stored.keys() - generated)
    assert not missing and not unexpected, f"missing {missing[:20]}, unexpected {unexpected[:20]}"

    # The derived tables are whole too: every trace became one complete run with all its tools.
    runs = server.query(
        "SELECT count(*), count(*) FILTER (WHERE status = 'complete' AND n_spans = ? AND n_executions = ?) "
        "FROM run_traces",
        [TOOLS_PER_TRACE + 1, TOOLS_PER_TRACE],
    )
    assert runs == [(generator.traces, generator.traces)], server.log()[-5000:]
    assert server.query("SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM executions") == [
        (generator.traces * TOOLS_PER_TRACE, generator.traces * TOOLS_PER_TRACE)
    ]

    _assert_history_exported_once(server)


def _assert_history_exported_once(server: ServeProcess) -> None:
    """The Parquet history equals the file: every span and every verdict, none twice, none missing."""
    out = server.db.parent / "history"
    for table, query, key in (
        ("otel_traces", OTEL_TRACES, '"TraceId", "SpanId"'),
        ("scores", SCORES, "run_id, scorer, run_version"),
    ):
        files = f"read_parquet('{out}/{table}/*/*/*.parquet', hive_partitioning = false)"
        with duckdb.connect() as connection:
            rows = connection.execute(f"SELECT * FROM {files} ORDER BY {key}").fetchall()
            twice = connection.execute(
                f"SELECT {key}, count(*) FROM {files} GROUP BY ALL HAVING count(*) > 1 LIMIT 20"
            ).fetchall()
        assert not twice, f"{table}: exported more than once: {twice} (seed {SEED})"
        with duckdb.connect(str(server.db), read_only=True) as connection:
            window = ["1970-01-01", "2262-01-01"]
            expected = connection.execute(f"SELECT * FROM ({query}) ORDER BY {key}", window).fetchall()
        assert len(rows) == len(expected), (
            f"{table}: {len(rows)} exported, {len(expected)} stored (seed {SEED})"
        )
        assert rows == expected, f"{table}: the exported rows differ from the stored ones (seed {SEED})"
        print(
            f"{table}: {len(rows)} rows exported once each, in {len(list(out.glob(f'{table}/*/*/*')))} files"
        )
    assert not list((out / "_tmp").rglob("*.parquet"))

"""`tracescore demo --endpoint URL`: the demo's agent traffic sent to a `serve` of one's own.

The same scripted shop assistant and multi-turn conversation as `tracescore demo`, exported with the
real OTLP exporter (HTTP by default, `--protocol grpc`), but no sidecar of the demo's own: the runs go
to the server at URL, which stores and scores them against its own `--specs`. The demo's specs are
written beside `--db`'s name so that server (or `tracescore score`) can use them.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from collector.cli._demo import DEMO_SPECS
from collector.cli._demo_agent import ROLLOUTS, run_agent
from collector.cli._demo_conversation import GUESSING, run_conversation
from collector.cli._demo_conversation import SPECS as CONVERSATION_SPECS

PROTOCOLS = ("http/protobuf", "grpc")


class SendError(Exception):
    """The endpoint refused or could not be reached: nothing more is sent."""


def _exporter(endpoint: str, protocol: str) -> SpanExporter:
    if protocol == "grpc":
        target = endpoint.removeprefix("http://").removeprefix("https://")
        return GrpcExporter(endpoint=target, insecure=not endpoint.startswith("https://"), timeout=10)
    return HttpExporter(endpoint=endpoint.rstrip("/") + "/v1/traces", timeout=10)


class _Checked(SpanExporter):
    """The exporter, and whether every export it made succeeded (the SDK only logs a failure)."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner, self.failed = inner, 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.failed:  # once refused, the rest are not sent (each would retry for seconds)
            self.failed += 1
            return SpanExportResult.FAILURE
        result = self.inner.export(spans)
        self.failed += result is not SpanExportResult.SUCCESS
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


def _reachable(endpoint: str) -> None:
    """One clear line at once when nothing listens there, rather than the exporter's retries."""
    parsed = urllib.parse.urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if parsed.hostname is None or parsed.port is None:
        raise SendError(
            f"--endpoint {endpoint!r}: expected a URL with a host and a port, e.g. http://127.0.0.1:4318"
        )
    try:
        socket.create_connection((parsed.hostname, parsed.port), timeout=5).close()
    except OSError as exc:
        raise SendError(
            f"nothing answers at {endpoint} ({exc.strerror or exc}): start `tracescore serve` first "
            "(OTLP/HTTP on 127.0.0.1:4318, OTLP/gRPC on 127.0.0.1:4317)"
        ) from exc


def send_demo(endpoint: str, protocol: str, specs_path: Path) -> int:
    _reachable(endpoint)
    specs_path.write_text(DEMO_SPECS.format(db="YOUR.duckdb", specs=specs_path) + "---" + CONVERSATION_SPECS)
    print(f"tracescore demo: sending the demo agent's runs to {endpoint} over OTLP ({protocol})")
    print(f"its specs are in {specs_path}: serve them with `tracescore serve --specs {specs_path}`\n")
    sent = 0
    for service, send in (("shop-assistant", _send_shop), ("files-agent", _send_conversation)):
        exporter = _Checked(_exporter(endpoint, protocol))
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        # Batched as an agent's SDK would; every export checked (the SDK only logs a refusal).
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
        sent += send(provider, exporter)
        provider.shutdown()
        if exporter.failed:
            raise SendError(
                f"{exporter.failed} export(s) to {endpoint} over {protocol} failed: is `tracescore serve` "
                "listening there (OTLP/HTTP on 4318, gRPC on 4317; --protocol grpc for the gRPC port)?"
            )
    print(
        f"\nsent {sent} runs; the server scores each a grace period after its last span. See them with\n"
        f"  tracescore watch --server URL --existing      (URL: the server's HTTP address)\n"
        f"  tracescore score --db THE_SERVER'S.duckdb --spec {specs_path}"
    )
    return 0


def _send_shop(provider: TracerProvider, exporter: _Checked) -> int:
    tracer = provider.get_tracer("tracescore.demo")
    counts: dict[str, int] = {}
    for rollout in ROLLOUTS:
        if exporter.failed:
            return 0
        counts[rollout.task] = counts.get(rollout.task, 0) + 1
        trace_id = run_agent(tracer, rollout)
        print(f"  agent run  {rollout.task} #{counts[rollout.task]}: {rollout.story}  (trace {trace_id})")
    return len(ROLLOUTS)


def _send_conversation(provider: TracerProvider, exporter: _Checked) -> int:
    conversation = run_conversation(provider.get_tracer("tracescore.demo"), GUESSING)
    print(f"  conversation {conversation}: {len(GUESSING.turns)} turns, {GUESSING.story}")
    return len(GUESSING.turns)

"""The traces the OTLP tests send, sent again: to a real `tracescore serve` over OTLP, and captured as
OTLP/JSON requests so the same traces can be written to `otel_traces` the way the Collector's
ClickHouse exporter writes them (tests/collector/clickhouse/_exporter.py).

Every convention is in it: the recorded traces of every framework cell (tests/frameworks/fixtures,
sent request by request as recorded) and every fixture of tests/collector/recognise/test_conventions.py
(built with the real SDK, exported by the real OTLP exporters, and copied by an in-memory exporter on
the same providers), the hand-made kvlist request included.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests._otel import provider
from tests._server import ServeProcess
from tests.collector.clickhouse._chdb_tool import load
from tests.collector.recognise.test_conventions import (
    BUILDERS,
    Sent,
    _task_provider,
    kvlist_request,
    post_kvlist_arguments,
)
from tests.frameworks._cells import Truth, specs_for
from tests.frameworks.matrix import CELLS

# Two specs that judge every run, whatever its service: the whole reconciliation of each run's tool
# calls and its latency samples are in their verdicts, so equal verdicts mean equal runs.
EVERY_RUN_SPECS = """name: every-run/strict
expected_tools: [get_weather]
allow_additional: false
strict_counts: attempts
---
name: every-run/latency
latency: {max_ms: {"*": 600000}, p95_ms: {"*": 600000}}
"""


@dataclass
class Corpus:
    requests: list[dict[str, Any]]  # OTLP/JSON, as sent
    serve_db: Path  # what `tracescore serve --specs` stored and judged
    specs: Path
    unknown_trace_id: str  # the fixture with no agent, tool or chat span (database and HTTP spans)


def _hex(value: str) -> str:
    return base64.b64decode(value).hex() if value else ""


def otlp_json(spans: Any) -> dict[str, Any]:
    """SDK spans as the OTLP/JSON request their exporter would send (ids in hex, as in OTLP/JSON)."""
    request: dict[str, Any] = MessageToDict(encode_spans(spans))
    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _hex(span[key])
                for link in span.get("links", []):
                    link["traceId"], link["spanId"] = _hex(link["traceId"]), _hex(link["spanId"])
    return request


def _post(server: ServeProcess, body: bytes) -> None:
    request = urllib.request.Request(server.http_url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def framework_requests() -> list[bytes]:
    cells = sorted(cell.fixture for cell in CELLS)
    return [line for cell in cells for line in (cell / "otlp.jsonl").read_bytes().splitlines()]


def framework_specs() -> str:
    return "---\n".join(specs_for(Truth.load(cell.fixture / "calls.json")) for cell in CELLS)


def build_corpus(directory: Path) -> Corpus:
    specs = directory / "specs.yaml"
    specs.write_text(framework_specs() + "---\n" + EVERY_RUN_SPECS)
    server = ServeProcess(directory / "serve.duckdb", extra_args=("--specs", str(specs))).start()
    requests: list[dict[str, Any]] = []
    try:
        for line in framework_requests():
            _post(server, line)
            requests.append(json.loads(line))
        captured = InMemorySpanExporter()
        providers: dict[str, TracerProvider] = {
            "grpc": provider(server, "grpc"),
            "http": provider(server, "http"),
            "task": _task_provider(server),
        }
        for tp in providers.values():
            tp.add_span_processor(SimpleSpanProcessor(captured))
        sent = Sent()
        for build, which in BUILDERS:
            build(providers[which], sent)
        for tp in providers.values():
            assert tp.force_flush(10_000)
            tp.shutdown()
        requests.append(otlp_json(captured.get_finished_spans()))
        kvlist = kvlist_request()
        post_kvlist_arguments(server, sent, kvlist)
        requests.append(kvlist)
    finally:
        assert server.stop() == 0, server.log()
    return Corpus(requests, server.db, specs, sent.trace_id("unknown"))


def load_clickhouse(path: Path, requests: list[dict[str, Any]]) -> None:
    """The exporter's table, created with its own DDL, holding these requests' spans as it writes them
    (in a child process: tests/collector/clickhouse/_chdb_tool.py)."""
    load(path, requests)

"""No confident verdict from a trace that lacks the fact, from ClickHouse too (issue #27): runs the
OpenTelemetry SDK sent from a scope tracescore does not read, in the exporter's `otel_traces` table, get
the `error` verdict serve gives them (tests/collector/serve/test_unread_scopes.py), naming the scope;
a run with a chat span and no tool call still fails; a trace with nothing read and no run mark (a
database call) is still left out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests._otel import hex_trace
from tests.collector.clickhouse._corpus import load_clickhouse, otlp_json

pytest.importorskip("chdb")

SPEC = "name: lookup\nexpected_tools: [lookup_order]\n"


def _sent(directory: Path) -> dict[str, str]:
    """Three traces in the table: their trace ids by what they are."""
    captured = InMemorySpanExporter()
    marked = TracerProvider(resource=Resource.create({"service.name": "shop", "tracescore.task.id": "t"}))
    plain = TracerProvider(resource=Resource.create({"service.name": "web"}))
    for provider in (marked, plain):
        provider.add_span_processor(SimpleSpanProcessor(captured))
    acme = marked.get_tracer("acme.agent.tracing", "1.2")
    with acme.start_as_current_span("acme.step") as unread:
        with acme.start_as_current_span("acme.tool", attributes={"acme.tool": "lookup_order"}):
            pass
        with acme.start_as_current_span("acme.generation", attributes={"acme.model": "gpt"}):
            pass
    chat_attributes = {"gen_ai.operation.name": "chat"}
    with marked.get_tracer("my.agent").start_as_current_span(
        "chat gpt-4o", attributes=chat_attributes
    ) as chat:
        pass
    with plain.get_tracer("my.app").start_as_current_span("SELECT orders") as database:
        pass
    load_clickhouse(directory / "ch", [otlp_json(captured.get_finished_spans())])
    return {"unread": hex_trace(unread), "chat": hex_trace(chat), "database": hex_trace(database)}  # type: ignore[arg-type]


def test_a_run_of_an_unread_scope_is_an_error_naming_it_from_clickhouse(tmp_path: Path) -> None:
    traces = _sent(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    source = f"chdb:{tmp_path / 'ch'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "collector.cli",
            "score",
            "--clickhouse",
            source,
            "--spec",
            str(spec),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    verdicts = {v["trace_id"]: (v["label"], v["reason"]) for v in json.loads(done.stdout)}
    assert verdicts == {
        traces["unread"]: (
            "error",
            "spans from scope acme.agent.tracing 1.2 (3 spans) are in no convention tracescore reads: "
            "see docs/conventions.md",
        ),
        traces["chat"]: (
            "fail",
            "run has no tool executions; expected tool lookup_order has no clean execution",
        ),
    }

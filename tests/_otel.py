"""The real OpenTelemetry SDK, exporting through the real OTLP exporters to a test server."""

from __future__ import annotations

from typing import Any

import duckdb
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from tests._server import ServeProcess


def exporter(server: ServeProcess, protocol: str, **kwargs: Any) -> SpanExporter:
    if protocol == "grpc":
        return GrpcExporter(endpoint=server.grpc_endpoint, insecure=True, **kwargs)
    return HttpExporter(endpoint=server.http_url, **kwargs)


def provider(
    server: ServeProcess, protocol: str = "grpc", service: str = "test-agent", **kwargs: Any
) -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    tp.add_span_processor(BatchSpanProcessor(exporter(server, protocol, **kwargs)))
    return tp


def hex_span(span: ReadableSpan) -> str:
    """A finished SDK span's id as the collector stores it."""
    assert span.context is not None
    return format(span.context.span_id, "016x")


def hex_trace(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.trace_id, "032x")


def stored_rows(server: ServeProcess, sql: str) -> list[dict[str, Any]]:
    """Rows as dicts by column name, read from the file once the server has stopped."""
    with duckdb.connect(str(server.db), read_only=True) as connection:
        cursor = connection.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

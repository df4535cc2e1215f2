"""The real OpenTelemetry SDK, exporting through the real OTLP exporters to a test server."""

from __future__ import annotations

from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
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

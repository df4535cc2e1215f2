"""Verdicts back into the user's pipeline, over OTLP: a span per verdict carrying the GenAI
`gen_ai.evaluation.result` event, and metrics (verdict counts, value histogram, tool latency).

Configured by the standard `OTEL_EXPORTER_OTLP_*` variables (the SDK exporters read them) or by
`--export-endpoint`/`--export-protocol`. Everything is emitted under the instrumentation scope
`tracescore`, which the receivers recognise and ignore if it comes back to them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Link, SpanContext, TraceFlags

from collector.model.domain import OWN_SCOPE
from collector.serve._export_settings import ExportSettings
from scoring import ConversationVerdict, Verdict

log = logging.getLogger("tracescore.export")


def _exporters(settings: ExportSettings) -> tuple[SpanExporter, MetricExporter]:
    if settings.protocol.startswith("http"):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetrics
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans

        base = settings.endpoint.rstrip("/") if settings.endpoint else None
        return (
            HttpSpans(endpoint=f"{base}/v1/traces" if base else None),
            HttpMetrics(endpoint=f"{base}/v1/metrics" if base else None),
        )
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

    insecure = None
    if settings.endpoint and settings.endpoint.startswith("http://"):
        insecure = True
    return GrpcSpans(endpoint=settings.endpoint, insecure=insecure), GrpcMetrics(
        endpoint=settings.endpoint, insecure=insecure
    )


class VerdictExporter:
    def __init__(self, settings: ExportSettings) -> None:
        resource = Resource.create({"service.name": "tracescore"})
        spans, metrics = _exporters(settings)
        self._tracer_provider = TracerProvider(resource=resource)
        self._tracer_provider.add_span_processor(BatchSpanProcessor(spans))
        self._tracer = self._tracer_provider.get_tracer(OWN_SCOPE)
        reader = PeriodicExportingMetricReader(
            metrics, export_interval_millis=settings.metric_interval_s * 1000
        )
        self._meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        meter = self._meter_provider.get_meter(OWN_SCOPE)
        self._verdicts = meter.create_counter(
            "tracescore.verdicts", unit="{verdict}", description="verdicts by spec and label"
        )
        self._values = meter.create_histogram(
            "tracescore.verdict.value", description="verdict value (satisfied/checks)"
        )
        self._tool_latency = meter.create_histogram(
            "tracescore.tool.duration", unit="ms", description="tool execution duration"
        )

    def export(self, verdicts: Iterable[Verdict], roots: Mapping[str, str | None]) -> None:
        """One span per verdict, linked to the run's root span (`roots`: run id → root span id)."""
        for v in verdicts:
            links = []
            root = roots.get(v.run_id)
            if root and len(v.trace_id) == 32:
                context = SpanContext(
                    int(v.trace_id, 16), int(root, 16), is_remote=True, trace_flags=TraceFlags(1)
                )
                links.append(Link(context, {"tracescore.link": "evaluated_run"}))
            attributes: dict[str, str | float | int | bool] = {
                "gen_ai.operation.name": "evaluate",
                "gen_ai.evaluation.name": v.spec,
                "gen_ai.evaluation.score.label": v.label
                if v.label == "error"
                else ("pass" if v.passed else "fail"),
                "tracescore.run.id": v.run_id,
                "tracescore.spec.fingerprint": v.spec_fingerprint,
                "tracescore.run.version": v.run_version,
            }
            if v.task:
                attributes["tracescore.task.id"] = v.task
            if isinstance(v, ConversationVerdict):
                attributes["tracescore.conversation.id"] = v.conversation_id
            event: dict[str, str | float | int | bool] = {
                "gen_ai.evaluation.name": v.spec,
                "gen_ai.evaluation.score.label": attributes["gen_ai.evaluation.score.label"],
                "gen_ai.evaluation.explanation": v.reason or "all checks satisfied",
            }
            if v.value is not None:
                event["gen_ai.evaluation.score.value"] = v.value
                attributes["gen_ai.evaluation.score.value"] = v.value
            if v.label == "error":
                event["error.type"] = "scorer_error"
            with self._tracer.start_as_current_span(
                f"evaluate {v.spec}", links=links, attributes=attributes
            ) as span:
                span.add_event("gen_ai.evaluation.result", event)
            self._verdicts.add(
                1,
                {
                    "tracescore.spec": v.spec,
                    "gen_ai.evaluation.score.label": str(event["gen_ai.evaluation.score.label"]),
                },
            )
            if v.value is not None:
                self._values.record(v.value, {"tracescore.spec": v.spec})

    def record_tool_durations(self, durations: Iterable[tuple[str, float, bool]]) -> None:
        for tool, milliseconds, error in durations:
            self._tool_latency.record(milliseconds, {"gen_ai.tool.name": tool, "error": error})

    def shutdown(self) -> None:
        try:
            self._tracer_provider.shutdown()
            self._meter_provider.shutdown()
        except Exception:  # export trouble at shutdown must not turn a clean stop into a crash
            log.exception("flushing verdict export failed")

"""Sending through the real OpenTelemetry SDK while keeping score of what happened to every span.

Every span gets a unique name, so what the SDK was given, what its exporter got an acknowledgement for,
what it gave up on, and what the database holds can be compared name by name.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


@dataclass
class Ledger:
    """What an exporter was handed and what became of it, by span name."""

    handed: set[str] = field(default_factory=set)
    acked: set[str] = field(default_factory=set)
    gave_up: set[str] = field(default_factory=set)
    exports: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    progress: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.progress = threading.Condition(self.lock)

    def wait_for_acks(self, at_least: int, timeout_s: float) -> bool:
        with self.progress:
            return self.progress.wait_for(lambda: len(self.acked) >= at_least, timeout_s)


class RecordingExporter(SpanExporter):
    """Wraps a real OTLP exporter (its own retries included) and books each batch's outcome."""

    def __init__(self, inner: SpanExporter, ledger: Ledger) -> None:
        self._inner = inner
        self.ledger = ledger

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        names = [span.name for span in spans]
        with self.ledger.lock:
            self.ledger.handed.update(names)
        result = self._inner.export(spans)
        with self.ledger.progress:
            self.ledger.exports += 1
            if result is SpanExportResult.SUCCESS:
                self.ledger.acked.update(names)
            else:
                self.ledger.gave_up.update(names)
            self.ledger.progress.notify_all()
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


class CountingGrpcExporter(OTLPSpanExporter):
    """The real OTLP/gRPC exporter, counting the outcome of every attempt it makes (its own retries
    included) by status code. Its log cannot be used for that: it suppresses repeated messages."""

    def __init__(self, **kwargs: Any) -> None:
        self.attempts: Counter[str] = Counter()
        self._attempts_lock = threading.Lock()
        super().__init__(**kwargs)

    def _initialize_channel_and_stub(self) -> None:  # also called again after UNAVAILABLE
        super()._initialize_channel_and_stub()
        send = self._client.Export

        def counted(*args: Any, **kwargs: Any) -> Any:
            try:
                response = send(*args, **kwargs)
            except grpc.RpcError as error:
                self._count(error.code().name)
                raise
            self._count("OK")
            return response

        self._client.Export = counted

    def _count(self, outcome: str) -> None:
        with self._attempts_lock:
            self.attempts[outcome] += 1

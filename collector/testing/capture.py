"""Every span a tracer provider ends, kept in memory for the test that asked (the pytest fixture's
capture; usable alone in a script)."""

from __future__ import annotations

import threading
from typing import cast

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider


class SpanCapture(SpanProcessor):
    """A span processor that keeps every ended span until `clear()`; `attach` adds it to a provider.
    Never raises on the hot path: it only appends under a lock."""

    def __init__(self) -> None:
        self._spans: list[ReadableSpan] = []
        # Spans started since the last clear() and not ended yet: span id -> name.
        self._open: dict[int, str] = {}
        self._lock = threading.Lock()
        self._active = True
        self.provider: TracerProvider | None = None

    @classmethod
    def attach(cls, provider: TracerProvider | None = None) -> SpanCapture:
        """A capture on `provider`, or on the global provider, which becomes an SDK `TracerProvider`
        when none was set (an SDK provider cannot be put under a non-SDK one already set)."""
        capture = cls()
        capture.provider = provider or _global_sdk_provider()
        capture.provider.add_span_processor(capture)
        return capture

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if span.context is None:
            return
        with self._lock:
            if self._active:
                self._open[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            if self._active:
                self._spans.append(span)
                if span.context is not None:
                    self._open.pop(span.context.span_id, None)

    @property
    def open_spans(self) -> list[str]:
        """The names of the spans started since the last `clear()` that have not ended."""
        with self._lock:
            return list(self._open.values())

    @property
    def spans(self) -> list[ReadableSpan]:
        with self._lock:
            return list(self._spans)

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()
            self._open.clear()

    def shutdown(self) -> None:
        """Stops keeping spans; a provider has no way to remove a processor, so it stays, inert."""
        with self._lock:
            self._active = False
            self._spans.clear()
            self._open.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _global_sdk_provider() -> TracerProvider:
    current = trace.get_tracer_provider()
    # By what it can do, not its class: a provider made before its module was imported again (pytest's
    # own pytester does that between runs) is an SDK provider all the same.
    if callable(getattr(current, "add_span_processor", None)):
        return cast(TracerProvider, current)
    if type(current).__name__ != "ProxyTracerProvider":
        raise RuntimeError(
            f"the global tracer provider is a {type(current).__name__}, not an SDK TracerProvider: pass "
            "the provider to capture (tracescore.capture(provider))"
        )
    provider = TracerProvider()
    trace.set_tracer_provider(provider)
    return provider

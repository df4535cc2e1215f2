"""Spans from the OTel SDK or from an OTLP export file, as the decode stage reads an OTLP request.

SDK spans are encoded by the SDK's own OTLP encoder (what `OTLPSpanExporter` sends) and decoded by
`decode_protobuf`, so nothing here reads a span differently from `serve`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from collector.decode.decoded import UndecodableRequest
from collector.decode.from_json import decode_json
from collector.decode.from_protobuf import decode_protobuf
from collector.model.domain import Span


def spans_from_sdk(spans: Sequence[ReadableSpan]) -> list[Span]:
    """The SDK's spans as `serve` would decode them from the OTLP exporter's request."""
    if not spans:
        return []
    return decode_protobuf(encode_spans(spans).SerializeToString()).spans


def spans_from_file(path: Path) -> list[Span]:
    """The spans of an OTLP export file: a protobuf `ExportTraceServiceRequest`, a JSON one, or JSON
    lines of them (the Collector's file exporter, tests/frameworks/fixtures/*/otlp.jsonl). Raises
    `UndecodableRequest` naming the file and the line when it is none of those."""
    body = path.read_bytes()
    stripped = body.lstrip()
    if not stripped.startswith(b"{"):
        try:
            return decode_protobuf(body).spans
        except UndecodableRequest as exc:
            raise UndecodableRequest(f"{path}: not an OTLP protobuf or JSON export: {exc}") from exc
    try:
        json.loads(body)
        lines = [body]
    except ValueError:
        lines = [line for line in body.splitlines() if line.strip()]
    spans: list[Span] = []
    for number, line in enumerate(lines, 1):
        try:
            spans.extend(decode_json(line).spans)
        except UndecodableRequest as exc:
            raise UndecodableRequest(f"{path}: line {number}: {exc}") from exc
    return spans

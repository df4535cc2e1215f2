"""A small agent trace in OTLP protobuf (an agent span, a chat span asking for a tool, the tool's
execution), for paying first-use costs before the first real request does."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

_TRACE = bytes.fromhex("5eed" * 8)
_START = 1_700_000_000_000_000_000


def _span(span_id: int, parent: int | None, name: str, attributes: dict[str, str]) -> Span:
    span = Span(
        trace_id=_TRACE,
        span_id=span_id.to_bytes(8, "big"),
        name=name,
        start_time_unix_nano=_START,
        end_time_unix_nano=_START + 1_000_000,
    )
    if parent is not None:
        span.parent_span_id = parent.to_bytes(8, "big")
    span.attributes.extend(KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attributes.items())
    return span


def _body() -> bytes:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "tracescore-warm-up"
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "tracescore-warm-up"
    call = '{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "t", "arguments": {}}]}'
    scope.spans.extend(
        [
            _span(1, None, "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}),
            _span(2, 1, "chat m", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": f"[{call}]"}),
            _span(
                3,
                1,
                "execute_tool t",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "t",
                    "gen_ai.tool.call.id": "c1",
                    "gen_ai.tool.call.arguments": '{"x": 1}',
                },
            ),
        ]
    )
    return bytes(request.SerializeToString())


WARM_UP_BODY = _body()

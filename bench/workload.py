"""A fixed, seeded agent workload as ready-to-send OTLP protobuf requests.

Each trace is one agent run: an `invoke_agent` span, two chat spans whose `gen_ai.output.messages`
request tool calls, and three `execute_tool` spans with ~200-byte JSON arguments (one in twenty
errors). Spans are packed 512 to a request, like the SDK's BatchSpanProcessor. The same seed gives
the same bytes, so runs compare.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

SPANS_PER_REQUEST = 512
SPANS_PER_TRACE = 6
TOOL_SPANS_SHARE = 0.5  # three tool spans in every six
# The one online spec of the verdict-lag and memory steps: it selects every run of the workload.
SPEC = "name: bench\nexpected_tools: [lookup_shipping_cutoff]\nallow_additional: true\n"
# Runs built by the load generator for a sustained run, repeated as new runs (cycled below).
SUSTAINED_BASE_TRACES = 10_240
TOOLS = ("lookup_shipping_cutoff", "quote_shipping", "check_stock", "search_orders", "refund_order")


@dataclass(frozen=True)
class Workload:
    requests: list[bytes]
    spans: int
    tool_spans: int
    traces: int
    root_of_trace: list[tuple[bytes, int]]  # (trace id, index of the request carrying its root span)


def _kv(key: str, value: str | int | bool) -> KeyValue:
    kv = KeyValue(key=key)
    if isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    else:
        kv.value.string_value = value
    return kv


def _arguments(rng: random.Random) -> str:
    payload = {
        "region": rng.choice(["north", "south", "east", "west"]),
        "service": rng.choice(["priority", "standard"]),
        "order_id": f"A-{rng.randrange(10**6):06d}",
        "note": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(110)),
    }
    return json.dumps(payload)


def _trace(rng: random.Random, t0: int, task: str) -> list[Span]:
    trace_id = rng.randbytes(16)
    agent_id = rng.randbytes(8)
    spans: list[Span] = []
    clock = t0

    def span(name: str, parent: bytes | None, duration_ns: int, attrs: list[KeyValue]) -> Span:
        nonlocal clock
        s = Span(
            trace_id=trace_id,
            span_id=rng.randbytes(8),
            name=name,
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=clock,
            end_time_unix_nano=clock + duration_ns,
        )
        if parent:
            s.parent_span_id = parent
        s.attributes.extend(attrs)
        clock += duration_ns + 1000
        return s

    calls = [(rng.choice(TOOLS), _arguments(rng), f"call_{rng.randrange(16**12):012x}") for _ in range(3)]
    for round_calls in (calls[:2], calls[2:]):
        parts = [
            {"type": "tool_call", "id": cid, "name": name, "arguments": json.loads(args)}
            for name, args, cid in round_calls
        ]
        messages = json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}])
        spans.append(
            span(
                "chat gpt-bench",
                agent_id,
                40_000_000,
                [
                    _kv("gen_ai.operation.name", "chat"),
                    _kv("gen_ai.request.model", "gpt-bench"),
                    _kv("gen_ai.usage.input_tokens", rng.randrange(100, 4000)),
                    _kv("gen_ai.output.messages", messages),
                ],
            )
        )
        for name, args, cid in round_calls:
            s = span(
                f"execute_tool {name}",
                agent_id,
                rng.randrange(1_000_000, 30_000_000),
                [
                    _kv("gen_ai.operation.name", "execute_tool"),
                    _kv("gen_ai.tool.name", name),
                    _kv("gen_ai.tool.call.id", cid),
                    _kv("gen_ai.tool.call.arguments", args),
                    _kv("gen_ai.tool.call.result", '{"ok": true}'),
                ],
            )
            if rng.random() < 0.05:
                s.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="upstream timeout"))
                s.attributes.append(_kv("error.type", "TimeoutError"))
            spans.append(s)
    root = Span(
        trace_id=trace_id,
        span_id=agent_id,
        name="invoke_agent shop",
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=t0 - 1000,
        end_time_unix_nano=clock,
    )
    root.attributes.extend(
        [
            _kv("gen_ai.operation.name", "invoke_agent"),
            _kv("gen_ai.agent.name", "shop"),
            _kv("tracescore.task.id", task),
            _kv("gen_ai.conversation.id", f"s-{rng.randrange(10**9)}"),
        ]
    )
    spans.append(root)  # children end first, so the root is exported last, as the SDK does
    return spans


def build(traces: int, seed: int = 42) -> Workload:
    rng = random.Random(seed)
    t0 = 1_700_000_000_000_000_000
    requests: list[bytes] = []
    roots: list[tuple[bytes, int]] = []
    current = ExportTraceServiceRequest()
    scope = None
    tool_spans = 0

    def fresh() -> tuple[ExportTraceServiceRequest, object]:
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.extend(
            [_kv("service.name", "shop-agent"), _kv("deployment.environment", "bench")]
        )
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name, scope_spans.scope.version = "bench.agent", "1.0"
        return request, scope_spans

    current, scope = fresh()
    count = 0
    for i in range(traces):
        for s in _trace(rng, t0 + i * 1_000_000_000, f"task-{i % 50}"):
            scope.spans.append(s)  # type: ignore[attr-defined]
            tool_spans += s.name.startswith("execute_tool")
            count += 1
            if s.name.startswith("invoke_agent"):
                roots.append((s.trace_id, len(requests)))
            if count % SPANS_PER_REQUEST == 0:
                requests.append(current.SerializeToString())
                current, scope = fresh()
    if count % SPANS_PER_REQUEST:
        requests.append(current.SerializeToString())
    return Workload(requests, count, tool_spans, traces, roots)


def cycled_id(identifier: bytes, cycle: int) -> bytes:
    """The trace or span id a workload's span has on its `cycle`-th repetition (the same on cycle 0)."""
    tail = int.from_bytes(identifier[-4:], "big") ^ cycle
    return identifier[:-4] + tail.to_bytes(4, "big")


def cycled(body: bytes, cycle: int, shift_ns: int) -> bytes:
    """One request of the workload as sent on its `cycle`-th repetition: trace and span ids changed by
    `cycled_id` (a run is known by its agent span's id), times moved `shift_ns` later, conversation ids
    made new. A sustained run repeats a workload built once as new runs: building 500 k runs would take
    minutes and gigabytes."""
    if not cycle:
        return body
    request = ExportTraceServiceRequest.FromString(body)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                span.trace_id = cycled_id(span.trace_id, cycle)
                span.span_id = cycled_id(span.span_id, cycle)
                if span.parent_span_id:
                    span.parent_span_id = cycled_id(span.parent_span_id, cycle)
                span.start_time_unix_nano += shift_ns
                span.end_time_unix_nano += shift_ns
                if span.name.startswith("invoke_agent"):
                    for attribute in span.attributes:
                        if attribute.key == "gen_ai.conversation.id":
                            attribute.value.string_value += f"-{cycle}"
    return request.SerializeToString()

"""OTLP protobuf straight into the `spans` table's Arrow rows, with no per-span Python objects.

The first step of issue 17's columnar ingest (decision 3): each column is a Python list filled while
the request is walked once, then handed to Arrow. The rows are exactly those
`store.rows.spans_table(decode_protobuf(body).spans, …)` gives (tests/collector/decode/
test_columnar.py compares them), and the same spans are rejected for the same reasons. It builds no
`Span`, so Python recognition cannot read its output: it is the input of recognition in SQL
(`recognise.in_sql`), which bench/README.md found slower than Python today, so no stage calls this
yet; bench/components.py measures it beside today's decode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from collector.decode.decoded import parent_or_root, span_problem
from collector.decode.from_protobuf import attributes, parse_request
from collector.decode.nesting import DroppedValues
from collector.model.jsontext import to_json
from collector.store.rows import SPAN_SCHEMA

_U8 = 2**8 - 1
_U32 = 2**32 - 1


def _u8(value: int) -> int:
    return value if 0 <= value <= _U8 else min(max(value, 0), _U8)


def _u32(value: int) -> int:
    return value if 0 <= value <= _U32 else min(max(value, 0), _U32)


@dataclass(slots=True)
class ColumnarRequest:
    """A request's spans as Arrow rows (ingest sequence and arrival time left for the writer), and the
    spans rejected, counted by reason as `DecodedRequest` counts them."""

    rows: pa.Table
    rejected: int = 0
    problems: dict[str, int] = field(default_factory=dict)
    dropped_values: DroppedValues = field(default_factory=DroppedValues)


def decode_protobuf_columns(body: bytes, seq: int = 0, received_us: int = 0) -> ColumnarRequest:
    dropped = DroppedValues()
    request = parse_request(body, dropped)  # raises UndecodableRequest
    columns: list[list[Any]] = [[] for _ in SPAN_SCHEMA]
    (
        trace_ids, span_ids, parents, names, kinds, starts, ends, durations, status_codes,
        status_messages, services, scopes, scope_versions, span_attributes, resource_attributes,
        events_column, links_column, trace_states, flags, dropped_attributes, dropped_events,
        dropped_links, _, _,
    ) = columns  # fmt: skip
    problems: dict[str, int] = {}
    rejected = 0
    for resource_spans in request.resource_spans:
        resource_attrs = attributes(resource_spans.resource.attributes, dropped)
        resource_json = to_json(resource_attrs)
        service = resource_attrs.get("service.name")
        service = service if isinstance(service, str) else None
        for scope_spans in resource_spans.scope_spans:
            scope, scope_version = scope_spans.scope.name or None, scope_spans.scope.version or None
            for pb in scope_spans.spans:
                trace_id, span_id = pb.trace_id.hex(), pb.span_id.hex()
                parent = parent_or_root(pb.parent_span_id.hex())
                name, start, end = pb.name, pb.start_time_unix_nano, pb.end_time_unix_nano
                problem = span_problem(trace_id, span_id, parent, name, start, end)
                if problem:
                    rejected += 1
                    problems[problem] = problems.get(problem, 0) + 1
                    continue
                pb_links = pb.links
                links = [
                    {
                        "trace_id": k.trace_id.hex(),
                        "span_id": k.span_id.hex(),
                        "attributes": attributes(k.attributes, dropped),
                    }
                    for k in pb_links
                    if len(k.trace_id) == 16 and len(k.span_id) == 8
                ]
                pb_events = pb.events
                status = pb.status
                trace_ids.append(trace_id)
                span_ids.append(span_id)
                parents.append(parent)
                names.append(name)
                kinds.append(_u8(pb.kind))
                starts.append(start)
                ends.append(end)
                durations.append((end - start) / 1e6)
                status_codes.append(_u8(status.code))
                status_messages.append(status.message or None)
                services.append(service)
                scopes.append(scope)
                scope_versions.append(scope_version)
                before = dropped.count
                span_attributes.append(to_json(attributes(pb.attributes, dropped)))
                own_dropped = dropped.count - before
                resource_attributes.append(resource_json)
                events_column.append(
                    to_json(
                        [
                            {
                                "name": e.name,
                                "time_unix_nano": e.time_unix_nano,
                                "attributes": attributes(e.attributes, dropped),
                            }
                            for e in pb_events
                        ]
                    )
                    if pb_events
                    else "[]"
                )
                links_column.append(to_json(links) if links else "[]")
                trace_states.append(pb.trace_state or None)
                flags.append(_u32(pb.flags))
                dropped_attributes.append(_u32(pb.dropped_attributes_count + own_dropped))
                dropped_events.append(_u32(pb.dropped_events_count))
                dropped_links.append(_u32(pb.dropped_links_count + len(pb_links) - len(links)))
    count = len(trace_ids)
    columns[-2], columns[-1] = [seq] * count, [received_us] * count
    rows = pa.Table.from_arrays(
        [pa.array(column, type=f.type) for column, f in zip(columns, SPAN_SCHEMA, strict=True)],
        schema=SPAN_SCHEMA,
    )
    return ColumnarRequest(rows, rejected, problems, dropped)

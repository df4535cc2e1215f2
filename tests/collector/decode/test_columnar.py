"""The columnar decoder gives exactly the rows today's path stores: `decode_protobuf`, then
`store.rows.spans_table`, on the bench workload, on every recorded framework trace (re-encoded as
protobuf) and on spans that are rejected or odd."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from bench.workload import build
from collector.decode._warm_up import WARM_UP_BODY
from collector.decode.columnar import decode_protobuf_columns
from collector.decode.from_protobuf import decode_protobuf
from collector.store.rows import spans_table
from tests.frameworks.matrix import CELLS, Cell

_IDS = ("traceId", "spanId", "parentSpanId")


def _proto_json(value: Any) -> Any:
    """OTLP/JSON (hex ids) as proto3 JSON (base64 bytes), for `json_format`."""
    if isinstance(value, list):
        return [_proto_json(v) for v in value]
    if isinstance(value, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode()
            if k in _IDS and isinstance(v, str)
            else _proto_json(v)
            for k, v in value.items()
        }
    return value


def _protobuf(otlp_json: bytes) -> bytes:
    request = json_format.Parse(
        json.dumps(_proto_json(json.loads(otlp_json))),
        ExportTraceServiceRequest(),
        ignore_unknown_fields=True,
    )
    return bytes(request.SerializeToString())


def _assert_same_rows(body: bytes) -> None:
    decoded = decode_protobuf(body)
    columnar = decode_protobuf_columns(body, 7, 1_700_000_000_000_000)
    assert columnar.rows.equals(spans_table(decoded.spans, 7, 1_700_000_000_000_000))
    assert (columnar.rejected, columnar.problems) == (decoded.rejected, decoded.problems)


def test_the_bench_workload_decodes_to_the_same_rows() -> None:
    for body in [WARM_UP_BODY, *build(60, seed=3).requests]:
        _assert_same_rows(body)


@pytest.mark.parametrize("cell", CELLS, ids=[c.name for c in CELLS])
def test_a_recorded_cell_decodes_to_the_same_rows(cell: Cell) -> None:
    for line in (cell.fixture / "otlp.jsonl").read_bytes().splitlines():
        _assert_same_rows(_protobuf(line))


def test_rejected_and_odd_spans_are_treated_alike() -> None:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    scope = resource_spans.scope_spans.add()
    good = scope.spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="ok", kind=99)
    good.start_time_unix_nano, good.end_time_unix_nano = 10, 5
    good.status.code = Status.STATUS_CODE_ERROR
    good.dropped_links_count = 2**32 - 1  # one more dropped link below: clamped
    good.links.add(trace_id=b"\x03" * 16, span_id=b"\x04" * 8).attributes.add(key="k").value.int_value = 1
    good.links.add(trace_id=b"\x03", span_id=b"\x04" * 8)
    event = good.events.add(name="exception", time_unix_nano=3)
    event.attributes.add(key="exception.type").value.string_value = "ValueError"
    good.attributes.add(key="nan").value.double_value = float("nan")
    good.attributes.add(key="list").value.array_value.values.add().bool_value = True
    scope.spans.add(trace_id=b"\x00" * 16, span_id=b"\x02" * 8, name="zero trace")
    scope.spans.add(trace_id=b"\x01" * 16, span_id=b"\x05" * 8, name="")
    _assert_same_rows(bytes(request.SerializeToString()))

"""The limit: the least work any implementation must do, in one Python process, with no network.

Parse every request (upb), pull out the execution columns of each tool span, then one Arrow insert into
DuckDB and one commit for the lot. Nothing else: no raw spans, no run tracking, no request side, no
per-request durability. tracescore's end-to-end rate (every request acknowledged only once committed)
is reported as a fraction of this.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import duckdb
import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

SCHEMA = pa.schema(
    [
        ("trace_id", pa.string()),
        ("span_id", pa.string()),
        ("tool_name", pa.string()),
        ("arguments", pa.string()),
        ("error", pa.bool_()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
    ]
)


def measure(requests: list[bytes]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        connection = duckdb.connect(str(Path(tmp) / "limit.duckdb"))
        connection.execute(
            "CREATE TABLE executions (trace_id VARCHAR, span_id VARCHAR, tool_name VARCHAR, arguments JSON, "
            "error BOOLEAN, start_ns BIGINT, end_ns BIGINT)"
        )
        spans = 0
        started = time.perf_counter()
        columns: list[list[object]] = [[] for _ in SCHEMA]
        for body in requests:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        spans += 1
                        attrs = {kv.key: kv.value for kv in span.attributes}
                        operation = attrs.get("gen_ai.operation.name")
                        if operation is None or operation.string_value != "execute_tool":
                            continue
                        values = (
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            attrs["gen_ai.tool.name"].string_value,
                            attrs["gen_ai.tool.call.arguments"].string_value,
                            span.status.code == 2,
                            span.start_time_unix_nano,
                            span.end_time_unix_nano,
                        )
                        for column, value in zip(columns, values, strict=True):
                            column.append(value)
        table = pa.Table.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(columns, SCHEMA, strict=True)], schema=SCHEMA
        )
        rows = table.num_rows
        connection.register("batch", table)
        connection.execute("BEGIN")
        connection.execute("INSERT INTO executions SELECT * FROM batch")
        connection.execute("COMMIT")
        connection.unregister("batch")
        elapsed = time.perf_counter() - started
        connection.close()
    return {"spans": spans, "rows": rows, "elapsed_s": elapsed, "spans_per_s": spans / elapsed}

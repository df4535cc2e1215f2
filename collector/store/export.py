"""`tracescore export`: history leaves the node as engine-neutral, hive-partitioned Parquet.

Layout (docs/export.md): `OUT/otel_traces/date=YYYY-MM-DD/ServiceName=S/part-<uuid>.parquet` with the
column names of the OpenTelemetry Collector's ClickHouse exporter (`otel_traces`), and
`OUT/scores/date=…/ServiceName=…/part-<uuid>.parquet` for verdicts. Files are written under
`OUT/_tmp/` and renamed into place, so a reader never sees a partial file; published files are never
rewritten. DuckDB, ClickHouse (`file()`/`s3()`), Spark and DuckLake read them as they are.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from collector.store.database import DatabaseError, explain_open_error

# The Collector's ClickHouse exporter writes kinds and status codes as these words.
_KIND = "['Unspecified', 'Internal', 'Server', 'Client', 'Producer', 'Consumer'][kind + 1]"
_STATUS = "['Unset', 'Ok', 'Error'][status_code + 1]"
# Partition values become path segments: anything but a safe set of characters is replaced.
_SERVICE = "regexp_replace(coalesce(service_name, 'unknown'), '[^A-Za-z0-9._-]', '_', 'g')"
_MAP = "'\"MAP(VARCHAR, VARCHAR)\"'"

OTEL_TRACES = f"""
SELECT
    start_time AS "Timestamp",
    trace_id AS "TraceId",
    span_id AS "SpanId",
    coalesce(parent_span_id, '') AS "ParentSpanId",
    coalesce(trace_state, '') AS "TraceState",
    name AS "SpanName",
    {_KIND} AS "SpanKind",
    {_SERVICE} AS "ServiceName",
    from_json(resource_attributes, {_MAP}) AS "ResourceAttributes",
    coalesce(scope_name, '') AS "ScopeName",
    coalesce(scope_version, '') AS "ScopeVersion",
    from_json(attributes, {_MAP}) AS "SpanAttributes",
    greatest(epoch_ns(end_time) - epoch_ns(start_time), 0)::UBIGINT AS "Duration",
    {_STATUS} AS "StatusCode",
    coalesce(status_message, '') AS "StatusMessage",
    list_transform(
        from_json(events, '[{{"name": "VARCHAR", "time_unix_nano": "BIGINT", "attributes": "JSON"}}]'),
        lambda e: {{'Timestamp': make_timestamp_ns(e.time_unix_nano), 'Name': e.name,
                    'Attributes': from_json(e.attributes, {_MAP})}}
    ) AS "Events",
    list_transform(
        from_json(links, '[{{"trace_id": "VARCHAR", "span_id": "VARCHAR", "attributes": "JSON"}}]'),
        lambda k: {{'TraceId': k.trace_id, 'SpanId': k.span_id, 'TraceState': '',
                    'Attributes': from_json(k.attributes, {_MAP})}}
    ) AS "Links",
    attributes->>'gen_ai.operation.name' AS gen_ai_operation_name,
    attributes->>'gen_ai.tool.name' AS gen_ai_tool_name,
    attributes->>'gen_ai.tool.call.id' AS gen_ai_tool_call_id,
    attributes->>'gen_ai.agent.name' AS gen_ai_agent_name,
    attributes->>'gen_ai.conversation.id' AS gen_ai_conversation_id,
    CAST(start_time AS DATE) AS date
FROM spans
WHERE start_time >= ? AND start_time < ?
"""

SCORES = f"""
SELECT
    v.run_id,
    v.trace_id AS "TraceId",
    r.root_span_id,
    v.spec AS scorer,
    v.spec_fingerprint AS scorer_version,
    v.label AS verdict,
    v.value AS score,
    CASE WHEN v.label = 'error' THEN 'error' WHEN v.passed THEN 'pass' ELSE 'fail' END AS label,
    v.reason AS explanation,
    v.scored_at::TIMESTAMP_NS AS evaluated_at,
    v.run_version,
    v.task_id,
    v.verdict AS verdict_json,
    {_SERVICE.replace("service_name", "r.service_name")} AS "ServiceName",
    CAST(coalesce(r.start_time, v.scored_at) AS DATE) AS date
FROM verdicts v LEFT JOIN runs r USING (run_id)
WHERE coalesce(r.start_time, v.scored_at) >= ? AND coalesce(r.start_time, v.scored_at) < ?
"""


@dataclass(frozen=True, slots=True)
class ExportResult:
    files: list[Path]
    spans: int
    scores: int


def _copy(connection: duckdb.DuckDBPyConnection, query: str, params: list[object], staging: Path) -> int:
    count_row = connection.execute(f"SELECT count(*) FROM ({query})", params).fetchone()
    count = int(count_row[0]) if count_row else 0
    if count:
        staging.parent.mkdir(parents=True, exist_ok=True)
        connection.execute(
            f"COPY ({query}) TO '{staging}' (FORMAT parquet, COMPRESSION zstd, "
            'PARTITION_BY (date, "ServiceName"), '
            "WRITE_PARTITION_COLUMNS true, FILENAME_PATTERN 'part-{uuid}', OVERWRITE_OR_IGNORE)",
            params,
        )
    return count


def _publish(staging: Path, target: Path) -> list[Path]:
    """Rename each staged file into its partition: readers see whole files or none."""
    published = []
    for file in sorted(staging.rglob("*.parquet")):
        destination = target / file.relative_to(staging)
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(file, destination)
        published.append(destination)
    return published


def export(db: Path, out: Path, since: datetime | None = None, until: datetime | None = None) -> ExportResult:
    if not db.exists():
        raise DatabaseError(f"{db} does not exist")
    try:
        connection = duckdb.connect(str(db), read_only=True)
    except duckdb.Error as exc:
        raise explain_open_error(db, exc) from exc
    window: list[object] = [
        since or datetime(1970, 1, 1),
        until or datetime(2262, 1, 1),
    ]  # TIMESTAMP_NS ends in 2262
    staging = out / "_tmp" / uuid.uuid4().hex
    try:
        tables = {
            r[0] for r in connection.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        spans = _copy(connection, OTEL_TRACES, window, staging / "otel_traces")
        scores = _copy(connection, SCORES, window, staging / "scores") if "verdicts" in tables else 0
        files = _publish(staging / "otel_traces", out / "otel_traces") + _publish(
            staging / "scores", out / "scores"
        )
    finally:
        connection.close()
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):
            (out / "_tmp").rmdir()  # only when no other export is staging there
    return ExportResult(files, spans, scores)

"""`tracescore export`: history leaves the node as engine-neutral, hive-partitioned Parquet.

Layout (docs/export.md): `OUT/otel_traces/date=YYYY-MM-DD/ServiceName=S/part-<uuid>.parquet` with the
column names of the OpenTelemetry Collector's ClickHouse exporter (`otel_traces`), and
`OUT/scores/date=…/ServiceName=…/part-<uuid>.parquet` for verdicts. Files are written under
`OUT/_tmp/` and renamed into place, so a reader never sees a partial file; published files are never
rewritten. DuckDB, ClickHouse (`file()`/`s3()`), Spark and DuckLake read them as they are.

The rows of a window are read as Arrow streams (`window_rows`): from the file itself when no server
holds it, or by a running server for its HTTP API (`tracescore export` while `serve` runs), and written
here by the same code either way (`export_rows`). `serve --export-dir` reads by watermark instead
(`spans_after`, `scores_after`; collector/serve/_history_export.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from collector.model.arrow import pa
from collector.store.database import DatabaseError, explain_open_error
from collector.store.parquet_files import ROWS, discard, publish, write_staged

# The Collector's ClickHouse exporter writes kinds and status codes as these words.
_KIND = "['Unspecified', 'Internal', 'Server', 'Client', 'Producer', 'Consumer'][kind + 1]"
_STATUS = "['Unset', 'Ok', 'Error'][status_code + 1]"
# Partition values become path segments: anything but a safe set of characters is replaced.
_SERVICE = "regexp_replace(coalesce(service_name, 'unknown'), '[^A-Za-z0-9._-]', '_', 'g')"
_MAP = "'\"MAP(VARCHAR, VARCHAR)\"'"

_TRACE_COLUMNS = f"""
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
"""
OTEL_TRACES = _TRACE_COLUMNS + "WHERE start_time >= ? AND start_time < ?\n"
# `serve --export-dir`: the spans of a window of ingest sequence numbers (every one of them below the
# writer's replay floor, so of completed traces only), read as stored; the columns of the layout are
# made from them where the files are written (`TRACES_FROM_ROWS`), by one thread of an instance of
# its own, so the server's instance only scans.
SPANS_AFTER = (
    "SELECT start_time, trace_id, span_id, parent_span_id, trace_state, name, kind, service_name, "
    "resource_attributes, scope_name, scope_version, attributes, end_time, status_code, status_message, "
    "events, links FROM spans WHERE ingest_seq > ? AND ingest_seq <= ?"
)
TRACES_FROM_ROWS = _TRACE_COLUMNS.replace("FROM spans", f"FROM {ROWS}")

_SCORE_COLUMNS = f"""
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
"""
SCORES = (
    _SCORE_COLUMNS
    + "WHERE coalesce(r.start_time, v.scored_at) >= ? AND coalesce(r.start_time, v.scored_at) < ?\n"
)
# `serve --export-dir`: verdicts by when they were stored. The runs they judge are folded only for the
# run ids at hand (the `runs` view would fold every run of the file, every cycle).
SCORES_AFTER = _SCORE_COLUMNS.replace(
    "FROM verdicts v LEFT JOIN runs r USING (run_id)",
    "FROM (SELECT * FROM verdicts WHERE scored_at > ? AND scored_at <= ?) v LEFT JOIN (\n"
    "    SELECT run_id, any_value(root_span_id) AS root_span_id, any_value(service_name) AS service_name,\n"
    "        min(start_time) AS start_time\n"
    "    FROM run_traces\n"
    "    WHERE run_id IN (SELECT run_id FROM verdicts WHERE scored_at > ? AND scored_at <= ?)\n"
    "    GROUP BY run_id\n"
    ") r USING (run_id)",
)
TABLES = ("otel_traces", "scores")
_BATCH_ROWS = 10_000


@dataclass(frozen=True, slots=True)
class ExportResult:
    files: list[Path]
    spans: int
    scores: int


def _has_verdicts(connection: duckdb.DuckDBPyConnection) -> bool:
    rows = connection.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'verdicts'"
    ).fetchall()
    return bool(rows[0][0])


def _reader(connection: duckdb.DuckDBPyConnection, query: str, params: list[object]) -> pa.RecordBatchReader:
    return connection.sql(query, params=params).to_arrow_reader(_BATCH_ROWS)


def _window(since: datetime | None, until: datetime | None) -> list[object]:
    return [since or datetime(1970, 1, 1), until or datetime(2262, 1, 1)]  # TIMESTAMP_NS ends in 2262


def window_rows(
    connection: duckdb.DuckDBPyConnection, table: str, since: datetime | None, until: datetime | None
) -> pa.RecordBatchReader:
    """One table of the layout for a time window, as a stream (an empty one for a file with no
    verdicts): spans by start, verdicts by their run's start."""
    if table == "otel_traces":
        return _reader(connection, OTEL_TRACES, _window(since, until))
    if not _has_verdicts(connection):  # nothing was ever scored: no rows, and no files
        schema = pa.schema([("ServiceName", pa.string()), ("date", pa.date32())])
        return pa.RecordBatchReader.from_batches(schema, [])
    return _reader(connection, SCORES, _window(since, until))


def spans_after(
    connection: duckdb.DuckDBPyConnection, after_seq: int, up_to_seq: int
) -> pa.RecordBatchReader:
    return _reader(connection, SPANS_AFTER, [after_seq, up_to_seq])


def scores_after(
    connection: duckdb.DuckDBPyConnection, after: datetime, up_to: datetime
) -> pa.RecordBatchReader:
    return _reader(connection, SCORES_AFTER, [after, up_to, after, up_to])


def export_rows(out: Path, rows: Callable[[str], pa.RecordBatchReader]) -> ExportResult:
    """Write each table's rows (`rows(table)`) under `out`, staged and renamed into place."""
    staging = out / "_tmp" / uuid.uuid4().hex
    counts: dict[str, int] = {}
    files: list[Path] = []
    try:
        for table in TABLES:
            counts[table] = write_staged(rows(table), staging / table, "part-{uuid}")
        for table in TABLES:
            files += publish(staging / table, out / table)
    finally:
        discard(staging)
    return ExportResult(files, counts["otel_traces"], counts["scores"])


def export(db: Path, out: Path, since: datetime | None = None, until: datetime | None = None) -> ExportResult:
    """`tracescore export` with no server holding `db`: read the file itself."""
    if not db.exists():
        raise DatabaseError(f"{db} does not exist")
    try:
        connection = duckdb.connect(str(db), read_only=True)
    except duckdb.Error as exc:
        raise explain_open_error(db, exc) from exc
    try:
        return export_rows(out, lambda table: window_rows(connection, table, since, until))
    finally:
        connection.close()

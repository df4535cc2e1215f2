"""Verdicts next to the traces: `tracescore_verdicts`, and the watermark of `score --follow`.

`tracescore_verdicts` has the columns of the `scores` export (docs/export.md), so the same dashboards
read both. It is a `ReplacingMergeTree` ordered by (run_id, run_version, scorer_version): scoring a run
again with the same spec replaces its row (ClickHouse folds replaced rows when it merges parts; read
with `FINAL` to see them folded at once). `tracescore_watermarks` keeps, per scorer (table, shard and
specs), the last trace whose verdicts are stored: `--follow` resumes after it.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime
from typing import Any

from collector.clickhouse.connection import Connection, identifier, insert_rows, quote, rows
from collector.clickhouse.selection import Selection

VERDICTS_TABLE = "tracescore_verdicts"
WATERMARKS_TABLE = "tracescore_watermarks"

# The `scores` columns of docs/export.md, in ClickHouse types.
VERDICT_COLUMNS = (
    ("run_id", "String"),
    ("TraceId", "String"),
    ("root_span_id", "String"),
    ("scorer", "LowCardinality(String)"),
    ("scorer_version", "String"),
    ("verdict", "LowCardinality(String)"),
    ("label", "LowCardinality(String)"),
    ("score", "Nullable(Float64)"),
    ("explanation", "Nullable(String)"),
    ("evaluated_at", "DateTime64(9, 'UTC')"),
    ("run_version", "Int64"),
    ("task_id", "Nullable(String)"),
    ("verdict_json", "String"),
    ("ServiceName", "LowCardinality(String)"),
    ("date", "Date"),
)


def _table(selection: Selection, name: str) -> str:
    return f"{identifier(selection.database)}.{identifier(name)}"


def create_tables(connection: Connection, selection: Selection) -> None:
    columns = ",\n    ".join(f"{name} {kind}" for name, kind in VERDICT_COLUMNS)
    connection.run(f"CREATE DATABASE IF NOT EXISTS {identifier(selection.database)}")
    connection.run(
        f"CREATE TABLE IF NOT EXISTS {_table(selection, VERDICTS_TABLE)} (\n    {columns},\n"
        "    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1\n"
        ") ENGINE = ReplacingMergeTree(evaluated_at)\n"
        "PARTITION BY toYYYYMM(date)\n"
        "ORDER BY (run_id, run_version, scorer_version)\n"
        # --follow tags each batch's insert: the batch scored again after a crash is dropped whole.
        "SETTINGS non_replicated_deduplication_window = 10000"
    )
    connection.run(
        f"CREATE TABLE IF NOT EXISTS {_table(selection, WATERMARKS_TABLE)} (\n"
        "    scorer_key String, first_ns Int64, TraceId String, updated_at DateTime64(9, 'UTC')\n"
        ") ENGINE = ReplacingMergeTree(updated_at) ORDER BY scorer_key"
    )


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, date):
        return value.isoformat()
    return value


def store_verdicts(
    connection: Connection, selection: Selection, records: list[dict[str, Any]], *, token: str | None = None
) -> None:
    """Rows of `collector.store.export.SCORES` (one per verdict) into tracescore_verdicts."""
    insert_rows(
        connection,
        _table(selection, VERDICTS_TABLE),
        [{key: _value(value) for key, value in record.items()} for record in records],
        token=token,
    )


def batch_token(key: str, first: tuple[int, str], last: tuple[int, str], count: int) -> str:
    """The same batch of the same scorer gets the same token, so its insert is taken once."""
    text = f"{key}|{first[0]}|{first[1]}|{last[0]}|{last[1]}|{count}"
    return hashlib.sha256(text.encode()).hexdigest()


def scorer_key(selection: Selection, fingerprints: list[str]) -> str:
    """Who keeps a watermark: the table, the shard and the specs (a new spec set starts from the window's
    beginning, as a new scorer would)."""
    shard = f"{selection.shard.index}/{selection.shard.count}" if selection.shard else "0/1"
    specs = hashlib.sha256("\n".join(sorted(fingerprints)).encode()).hexdigest()[:16]
    return f"{selection.database}.{selection.table} shard {shard} specs {specs}"


def read_watermark(connection: Connection, selection: Selection, key: str) -> tuple[int, str] | None:
    found = list(
        rows(
            connection,
            f"SELECT first_ns, TraceId FROM {_table(selection, WATERMARKS_TABLE)} FINAL "
            f"WHERE scorer_key = {quote(key)}",
        )
    )
    return (int(found[0][0]), str(found[0][1])) if found else None


def write_watermark(connection: Connection, selection: Selection, key: str, after: tuple[int, str]) -> None:
    insert_rows(
        connection,
        _table(selection, WATERMARKS_TABLE),
        [
            {
                "scorer_key": key,
                "first_ns": after[0],
                "TraceId": after[1],
                "updated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            }
        ],
    )

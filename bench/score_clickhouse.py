"""Scoring from ClickHouse next to scoring from DuckDB, over a million stored spans.

Fills the Collector exporter's `otel_traces` table (its own DDL, tests/collector/clickhouse/
traces_table.sql) in ClickHouse's engine (chDB) with agent traces (an agent span, two chat spans and
three tool spans each, ~200-byte JSON arguments) among plain traces (an HTTP server span and three
database spans each), written by ClickHouse itself from `numbers()`. Then times:

- choosing the agent traces in ClickHouse (the query `score --clickhouse` pages through);
- `score --clickhouse` scoring every agent run (read, recognise, complete, judge), as runs/s;
- `score --clickhouse --store` (what `--follow` does per batch): the same, and each batch's `scores`
  rows inserted into `tracescore_verdicts`, as runs/s;
- the same runs in a tracescore DuckDB file, scored by `score --db`'s set-based scorer, as runs/s.

    .venv/bin/python -m bench.score_clickhouse [--agent-traces 20000] [--plain-traces 220000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from collector.clickhouse import selection as sql
from collector.clickhouse.connection import connect, rows
from collector.clickhouse.scorer import Scratch, load_window, score_window
from collector.clickhouse.selection import Selection
from scoring import Spec
from scoring.batch.score import score_records

DDL = Path(__file__).resolve().parent.parent / "tests" / "collector" / "clickhouse" / "traces_table.sql"
START_NS = 1_796_000_000_000_000_000
SPEC = Spec.model_validate(
    {
        "name": "lookup-then-quote",
        "expected_tools": ["lookup", "quote"],
        "arguments": {"lookup": {"sku": "7"}},
    }
)

_AGENT_SPANS = """
INSERT INTO otel.otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, SpanName, SpanKind, ServiceName,
    ResourceAttributes, SpanAttributes, Duration, StatusCode)
SELECT
    fromUnixTimestamp64Nano(toInt64({start} + t * 1000000 + i * 100000)),
    lower(hex(MD5(concat('agent', toString(t))))),
    lower(substring(hex(MD5(concat('agent', toString(t), '/', toString(i)))), 1, 16)),
    if(i = 0, '', lower(substring(hex(MD5(concat('agent', toString(t), '/0'))), 1, 16))),
    multiIf(i = 0, 'invoke_agent shop', i < 3, 'chat gpt-4o',
        i = 5, 'execute_tool quote', 'execute_tool lookup'),
    if(i = 0, 'Internal', if(i < 3, 'Client', 'Internal')),
    'shop-agent',
    map('service.name', 'shop-agent'),
    multiIf(
        i = 0, map('gen_ai.operation.name', 'invoke_agent', 'gen_ai.agent.name', 'shop'),
        i < 3, map('gen_ai.operation.name', 'chat', 'gen_ai.request.model', 'gpt-4o'),
        map('gen_ai.operation.name', 'execute_tool', 'gen_ai.tool.name', if(i = 5, 'quote', 'lookup'),
            'gen_ai.tool.call.id', concat('call_', toString(t), '_', toString(i)),
            'gen_ai.tool.call.arguments',
            concat('{{"sku": "', toString(t % 11), '", "note": "', repeat('x', 160), '"}}'))
    ),
    if(i = 0, 1000000, 50000),
    if(i = 4 AND t % 10 = 0, 'Error', 'Unset')
FROM (SELECT intDiv(number, 6) AS t, number % 6 AS i FROM numbers({n}))
"""

_PLAIN_SPANS = """
INSERT INTO otel.otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, SpanName, SpanKind, ServiceName,
    ResourceAttributes, SpanAttributes, Duration, StatusCode)
SELECT
    fromUnixTimestamp64Nano(toInt64({start} + t * 200000 + i * 10000)),
    lower(hex(MD5(concat('plain', toString(t))))),
    lower(substring(hex(MD5(concat('plain', toString(t), '/', toString(i)))), 1, 16)),
    if(i = 0, '', lower(substring(hex(MD5(concat('plain', toString(t), '/0'))), 1, 16))),
    if(i = 0, 'GET /items', 'SELECT items'),
    if(i = 0, 'Server', 'Client'),
    'shop-api',
    map('service.name', 'shop-api'),
    if(i = 0, map('http.request.method', 'GET', 'url.path', '/items'),
        map('db.system.name', 'postgresql', 'db.query.text', 'SELECT * FROM items WHERE id = $1')),
    if(i = 0, 900000, 100000),
    'Unset'
FROM (SELECT intDiv(number, 4) AS t, number % 4 AS i FROM numbers({n}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent-traces", type=int, default=20_000)
    parser.add_argument("--plain-traces", type=int, default=220_000)
    parser.add_argument("--batch-traces", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("bench/results/score_clickhouse.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        connection = connect(f"chdb:{Path(tmp) / 'clickhouse'}")
        connection.run("CREATE DATABASE IF NOT EXISTS otel")
        connection.run(DDL.read_text())
        started = time.perf_counter()
        connection.run(_AGENT_SPANS.format(start=START_NS, n=args.agent_traces * 6))
        connection.run(_PLAIN_SPANS.format(start=START_NS, n=args.plain_traces * 4))
        connection.run("OPTIMIZE TABLE otel.otel_traces FINAL")
        spans = int(next(rows(connection, "SELECT count() FROM otel.otel_traces"))[0])
        built = time.perf_counter() - started

        selection = Selection()
        started = time.perf_counter()
        chosen = list(rows(connection, sql.traces_sql(selection, limit=10_000_000)))
        choose_s = time.perf_counter() - started
        assert len(chosen) == args.agent_traces, len(chosen)

        started, cpu = time.perf_counter(), time.process_time()
        verdicts = list(score_window(connection, selection, [SPEC], batch_traces=args.batch_traces))
        clickhouse_s = time.perf_counter() - started
        # CPU of this process (chDB's threads included): wall time on a shared machine measures others.
        clickhouse_cpu_s = time.process_time() - cpu
        assert len(verdicts) == args.agent_traces

        # What `--follow` and `--store` do: the same, each batch's `scores` rows written back to ClickHouse.
        started, cpu = time.perf_counter(), time.process_time()
        stored = list(score_window(connection, selection, [SPEC], store=True, batch_traces=args.batch_traces))
        store_s = time.perf_counter() - started
        store_cpu_s = time.process_time() - cpu
        assert len(stored) == args.agent_traces
        written = next(rows(connection, "SELECT count() FROM otel.tracescore_verdicts"))[0]
        assert int(written) == args.agent_traces, written

        scratch = Scratch()
        try:
            started = time.perf_counter()
            load_window(connection, selection, scratch, batch_traces=args.batch_traces)
            load_s = time.perf_counter() - started
            started = time.perf_counter()
            from_duckdb = list(score_records(scratch.connection, [SPEC]))
            duckdb_s = time.perf_counter() - started
        finally:
            scratch.close()
            connection.close()
    assert sorted(v.to_dict()["run_id"] for v in from_duckdb) == sorted(v.run_id for v in verdicts)
    runs = args.agent_traces
    figures = {
        "stored_spans": spans,
        "agent_runs": runs,
        "build_s": round(built, 1),
        "choose_agent_traces_s": round(choose_s, 2),
        "score_from_clickhouse_s": round(clickhouse_s, 1),
        "score_from_clickhouse_runs_per_s": round(runs / clickhouse_s),
        "score_from_clickhouse_cpu_s": round(clickhouse_cpu_s, 1),
        "score_from_clickhouse_runs_per_cpu_s": round(runs / clickhouse_cpu_s),
        "score_and_store_from_clickhouse_s": round(store_s, 1),
        "score_and_store_from_clickhouse_runs_per_s": round(runs / store_s),
        "score_and_store_from_clickhouse_runs_per_cpu_s": round(runs / store_cpu_s),
        "load_into_duckdb_through_the_writer_s": round(load_s, 1),
        "score_from_duckdb_s": round(duckdb_s, 2),
        "score_from_duckdb_runs_per_s": round(runs / duckdb_s),
        "batch_traces": args.batch_traces,
    }
    for key, value in figures.items():
        print(f"{key:<42} {value}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""ClickHouse: scoring the traces where a fleet already keeps them, the OpenTelemetry Collector's
`otel_traces` table, and writing the verdicts next to them.

Owns: the two connections to ClickHouse (its HTTP interface, or its engine in this process through
chDB) behind one SQL path, the choice of traces to score made inside ClickHouse (agent and tool spans,
a time window, a shard), reading `otel_traces` rows back into domain spans, scoring them batch by batch
(in memory, or through the decode stage's preparing, the writer and the batch scorer into a scratch
DuckDB database where SQL over the runs is asked for), the
`tracescore_verdicts` table and the watermark of `--follow`.
Takes in: a ClickHouse URL, a selection (database, table, window, shard) and specs, from the CLI.
Hands on: verdicts (the batch scorer's `Scored`), and their rows in `tracescore_verdicts`.

Public:
- `connection`: `connect`, `Connection`, `ClickHouseError`, `rows`, `insert_rows`, `quote`, `identifier`.
- `selection`: `Selection`, `Shard`, the SQL that chooses and reads traces.
- `spans`: `span_from_row`, `attribute_value` (what the exporter wrote, read back).
- `scorer`: `score_window`, `follow`, `load_window`, `Scratch`.
- `in_memory`: `judge_in_memory` (a batch's runs completed and judged without a store).
- `verdicts`: `create_tables`, `store_verdicts`, the watermark, `VERDICTS_TABLE`.
"""

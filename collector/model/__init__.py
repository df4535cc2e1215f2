"""The domain every collector stage shares: spans, tool executions, tool requests, as plain Python.

Owns: the frozen-in-spirit records that travel between stages (`Span`, `ToolExecution`,
`ToolRequest`, `SpanNode`, …) and the one rule for writing JSON text into DuckDB columns. Nothing
here knows protobuf, JSON wire rules, sockets or DuckDB.
Takes in: nothing; every other stage builds these records.
Hands on: the records, to every stage above.

Public:
- `domain`: `Span`, `Resource`, `SpanEvent`, `SpanLink`, `Arguments`, `ToolExecution`, `ToolRequest`,
  `AgentInfo`, `SpanNode`, the status codes, `OWN_SCOPE`, and `compact_pickle` (how records cross a
  decode worker's pipe cheaply).
- `jsontext`: `to_json`, always valid JSON text whatever a span carried.
- `arrow`: `pa`, pyarrow imported on first use (an idle server holds none of it), and `after_import`.
"""

"""Set-based scoring: a whole stored history judged with one SQL query per spec, not a loop per run.

Owns: which specs compile to SQL (the default profile's expected tools, argument specs, strict mode,
forbidden tools, per-execution latency bounds, `select` and `scope`), the generated DuckDB query and
its pieces (literals, JSON text assembly, `matches_subset` in SQL), many runs' `select` at once, and
storing the verdicts row for row as `store_verdicts` would, and one query for a family of specs that
differ only in name and `select`. Specs outside the compiled subset keep the
Python judge; tests/scoring/batch/test_batch_parity.py holds the two to identical verdicts.
Takes in: `Spec`s and a DuckDB connection to a stored history.
Hands on: `Verdict`s (or their stored rows) for `tracescore score` and `report`.

Public:
- `score`: `score_records`, `score_history`, `store_history`, `Scored`.

Private: `_plan`, `_family`, `_family_query`, `_sql`, `_sql_json`, `_sql_literal`, `_sql_match`, `_select`,
`_runs`, `_store`, `_conversations` (specs with `turns`, judged in Python against stored conversations after
the runs), `_unread` (runs tracescore could not read, left out of the SQL and judged `error` in Python).
"""

"""Verdicts: the judgement record, its JSON form, and the table it is stored in.

Owns: `CheckResult` and `Verdict` (DESIGN §7) with their versioned JSON form, the `verdicts` table and
`task_results` view (docs/storage.md), and two DuckDB helpers every tracescore table is made with: ZSTD
columns that fall back where a DuckDB lacks them, and Arrow batches seen as views. The collector's
store creates its own tables with the same two helpers, which is why they live at this lowest level.
Takes in: verdicts from the judge (one run at a time) or from set-based scoring.
Hands on: stored verdict rows (keyed on run, spec and run version) and their JSON text.

Public:
- `record`: `CheckResult`, `Verdict`, `verdict_from_dict`, `error_verdict`, `verdict_text`,
  `VERDICT_SCHEMA_VERSION`.
- `table`: `store_verdicts`, `ensure_verdict_schema`, `verdict_json`.
- `ddl`: `execute_ddl`, `ZSTD`; `arrow_view`: `register_arrow`.
"""

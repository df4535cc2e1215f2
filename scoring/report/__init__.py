"""Reporting: verdicts turned into what people read, per task and over time.

Owns: per-task statistics over k rollouts (pass rate, pass@k, pass^k, learning zone), the sections of
`tracescore report` read from the stored tables (pass-rate history, tool latency, failing runs), the
text, JSON and self-contained HTML forms, and `tracescore diff` between two saved results (and
`compare` between two groups of runs) with confidence intervals and Fisher's exact test.
Takes in: `Verdict`s, and for the report's sections a DuckDB connection.
Hands on: `TaskResult`s, a `Report`, and their text, JSON or HTML.

A new output format goes here beside `text` and `html`.

Public:
- `aggregate`: `TaskResult`, `aggregate`, `pass_at_k`, `pass_hat_k`.
- `build`: `Report`, `build_report`, `task_latency`, `ReportError`, `SECTIONS`, `BUCKETS`.
- `text`: `verdicts_text`, `tasks_text`, `report_text`, the JSON writers, `number`, `ms`, `table`.
- `html`: `report_html`.
- `diff`: `diff`, `load_results`, `DiffError`, `TaskDelta`, `gate_fails`: two sides per task and spec, with
  intervals and an exact test (`tracescore diff` and `compare`).
- `diff_text`: `deltas_text`, the table of both.
- `stats`: `wilson_interval`, `fisher_exact`: the statistics, in pure Python.
- `draft`: `draft_spec`, `Draft`: a spec drafted from chosen runs that they all pass (`tracescore spec
  draft`), each key with its evidence.

Private: `_charts` (the SVG charts of the HTML page).
"""

"""Specs: what a good run did, as users write it, validated with messages that name the fix.

Owns: loading spec files (YAML or JSON, one spec or a list, bounded against YAML bombs), the `Spec`
model and the models of every catalogue key (argument rules, counts, trajectories, parallel rounds,
latency percentiles), which runs a spec `select`s, and the pattern languages specs use (RE2 regexes
in linear time; Draft 2020-12 JSON Schema with readable violations).
Takes in: spec files and a run's attributes.
Hands on: validated `Spec`s (each with its fingerprint) to the checks and the judge; `selects(select,
run)` to every scorer.

A new spec key goes in `specs` (or `check_models` for a check's own model), with its check in the
checks stage and its entry in docs/checks.md.

Public:
- `specs`: `Spec`, `CATALOGUE_KEYS`, `MULTITURN_KEYS`.
- `errors`: `SpecError` (apart from the models: catching it loads no pydantic).
- `files`: `load_specs`, `load_spec_file`, `spec_files`: spec files and folders read and validated;
  `load_spec_text`, `load_spec_data`: specs given as YAML text or parsed data (the Python API).
- `check_models`: the catalogue keys' models (`Rule`, `TrajectoryItem`, `Latency`, …).
- `percentiles`: `PERCENTILES`, `window_seconds` (the latency keys' plain data, which the task aggregate
  reads with no spec loaded).
- `multiturn_models`: the models of `results`, `flows`, `idempotent_writes`, `state` and `turns`.
- `select`: `selects`, `selected_value`, `SelectIndex` (many specs' selects indexed by value).
- `window`: `RunWindow` (--since, --until, --where), `window_run_ids`, `chosen_run_ids`, `group_values`:
  the runs a command chooses, and the values of an attribute among them.
- `regex`: `fullmatch`, `search`, `pattern_problem`, `PatternError`.
- `jsonschema`: `violations`, `schema_problem`.

Private: `_json` (what counts as a JSON value in a spec file), `_documents` (YAML and JSON read with
bounds against alias bombs and deep nesting), `_messages` (validation errors as a person reads them).
"""

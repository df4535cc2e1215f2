"""Checks: small functions behind one protocol, each judging one thing a spec asks of a run.

Owns: the registry (`register_check`, the door built-ins and users' checks alike come through) with
the built-in expected-tool, argument and latency checks, the catalogue registered after them in
verdict order (schema, argument rules, counts, trajectory and ordering, parallel rounds,
requests-executed, results and result shapes, flows, idempotent writes, state), the gates that fail a
run without counting in its value (strict mode, forbidden tools), request/execution reconciliation,
latency over history, and JSON-equality matching.
Takes in: a `Spec` and a run's evidence narrowed to the spec's scope (`Scoped`).
Hands on: `CheckResult`s to the judge. Only clean executions satisfy anything.

A new check goes in a module of its own here, registered with `@register_check` and imported by
`catalogue` in the place its results should take in a verdict; docs/checks.md documents it.

Public:
- `registry`: `CHECKS`, `register_check`, `Scoped`, `attempt_states`, `settle_order`.
- `catalogue`: importing it registers the catalogue (and settles the checks' order, whatever was
  imported first).
- `gates`: `strict_gate`, `forbidden_gate`, `additional_tools`.
- `reconcile`: `reconcile`, `reference`.
- `latency_history`: `samples`, `evaluate`, `nearest_rank`, `DETAIL_KEY`.
- `matching`: `matches_subset`, `json_equal`.
- `flows`: the `flows` check, and `judge_flow` (a conversation's flows are judged turn by turn).
- `credit`: `credit`, what one check counts for in a verdict's value (1, 0, or a per-key score).

Private: `_schema_check`, `_rules`, `_counts`, `_trajectory`, `_parallel`, `_requests_check`,
`_results`, `_flows_check`, `_idempotent`, `_state` (the catalogue's checks), `_paths` (dotted paths and JSON
pointers into results and state), `_bipartite` (maximum matching for unordered pairings).
"""

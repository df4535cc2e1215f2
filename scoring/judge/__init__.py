"""Judging: one run and one spec in, one verdict out, under the spec's profile.

Owns: the default profile (every registered check, the gates, the reason, reconciliation in the
detail), the `reliability_eval` profile (Agno's ReliabilityEval on the same evidence), the spec's
`scope`, and scoring stored runs one by one (select, judge, and a failing scorer turned into an
`error` verdict, never a crashed batch).
Takes in: `Spec`s and `Evidence` (from the stored tables, or from the collector's writer live).
Hands on: `Verdict`s, to whoever stores, streams or reports them.

Public:
- `run`: `judge`.
- `scorer`: `score_evidence`, `score_runs`, `SpecSet` (specs indexed by what they select).
- `conversation`: `judge_conversation`, `score_conversation`, `score_conversations` (specs with
  `turns`, judged against conversations).

Private: `_reliability` (the reliability_eval profile), `_scope` (what a spec may see of a run).
"""

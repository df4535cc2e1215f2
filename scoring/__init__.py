"""tracescore's scoring: specs, evidence-only checks, verdicts and rollout statistics.

Scorers read the stored tables, never OTLP. Everything in `_modules` is private and may move.
"""

from scoring.batch.score import score_history, store_history
from scoring.checks.matching import json_equal, matches_subset
from scoring.checks.registry import CHECKS, Scoped, register_check
from scoring.evidence.definitions import ToolDefinition
from scoring.evidence.runs import Evidence, Execution, Request, Run
from scoring.judge.run import judge
from scoring.judge.scorer import SpecSet, score_evidence, score_runs
from scoring.report.aggregate import TaskResult, aggregate, pass_at_k, pass_hat_k
from scoring.report.diff import DiffError, diff, load_results
from scoring.spec.files import load_specs
from scoring.spec.specs import Spec, SpecError
from scoring.verdict.record import CheckResult, ConversationVerdict, TurnVerdict, Verdict, verdict_from_dict
from scoring.verdict.table import ensure_verdict_schema, store_verdicts, verdict_json

__all__ = [
    "CHECKS",
    "CheckResult",
    "ConversationVerdict",
    "DiffError",
    "Evidence",
    "Execution",
    "Request",
    "Run",
    "Scoped",
    "Spec",
    "SpecError",
    "SpecSet",
    "TaskResult",
    "ToolDefinition",
    "TurnVerdict",
    "Verdict",
    "aggregate",
    "diff",
    "ensure_verdict_schema",
    "json_equal",
    "judge",
    "load_results",
    "load_specs",
    "matches_subset",
    "pass_at_k",
    "pass_hat_k",
    "register_check",
    "score_evidence",
    "score_history",
    "score_runs",
    "store_history",
    "store_verdicts",
    "verdict_from_dict",
    "verdict_json",
]

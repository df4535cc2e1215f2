"""tracescore's scoring: specs, evidence-only checks, verdicts and rollout statistics.

Scorers read the stored tables, never OTLP. Everything in `_modules` is private and may move.

Each public name is imported when first read (issue 33): the collector reaches `scoring.verdict.ddl`
and the other light modules on its way to DuckDB, which runs this file, and eager imports here pulled
the spec models (pydantic, jsonschema, re2: ~8 MiB resident) into a server given no spec.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scoring.batch.score import score_history, store_history
    from scoring.checks.matching import json_equal, matches_subset
    from scoring.checks.registry import CHECKS, Scoped, register_check
    from scoring.evidence.definitions import ToolDefinition
    from scoring.evidence.runs import Evidence, Execution, Request, Run
    from scoring.judge.run import judge
    from scoring.judge.scorer import SpecSet, score_evidence, score_runs
    from scoring.report.aggregate import TaskResult, aggregate, pass_at_k, pass_hat_k
    from scoring.report.diff import DiffError, diff, load_results
    from scoring.spec.errors import SpecError
    from scoring.spec.files import load_specs
    from scoring.spec.specs import Spec
    from scoring.verdict.record import (
        CheckResult,
        ConversationVerdict,
        TurnVerdict,
        Verdict,
        verdict_from_dict,
    )
    from scoring.verdict.table import ensure_verdict_schema, store_verdicts, verdict_json

# Where each public name lives. The check registry's names come after the catalogue is registered, as
# they did when everything was imported here: a user's check then always follows the built-in ones.
_HOMES = {
    "score_history": "scoring.batch.score",
    "store_history": "scoring.batch.score",
    "json_equal": "scoring.checks.matching",
    "matches_subset": "scoring.checks.matching",
    "CHECKS": "scoring.checks.registry",
    "Scoped": "scoring.checks.registry",
    "register_check": "scoring.checks.registry",
    "ToolDefinition": "scoring.evidence.definitions",
    "Evidence": "scoring.evidence.runs",
    "Execution": "scoring.evidence.runs",
    "Request": "scoring.evidence.runs",
    "Run": "scoring.evidence.runs",
    "judge": "scoring.judge.run",
    "SpecSet": "scoring.judge.scorer",
    "score_evidence": "scoring.judge.scorer",
    "score_runs": "scoring.judge.scorer",
    "TaskResult": "scoring.report.aggregate",
    "aggregate": "scoring.report.aggregate",
    "pass_at_k": "scoring.report.aggregate",
    "pass_hat_k": "scoring.report.aggregate",
    "DiffError": "scoring.report.diff",
    "diff": "scoring.report.diff",
    "load_results": "scoring.report.diff",
    "load_specs": "scoring.spec.files",
    "Spec": "scoring.spec.specs",
    "SpecError": "scoring.spec.errors",
    "CheckResult": "scoring.verdict.record",
    "ConversationVerdict": "scoring.verdict.record",
    "TurnVerdict": "scoring.verdict.record",
    "Verdict": "scoring.verdict.record",
    "verdict_from_dict": "scoring.verdict.record",
    "ensure_verdict_schema": "scoring.verdict.table",
    "store_verdicts": "scoring.verdict.table",
    "verdict_json": "scoring.verdict.table",
}
_FIRST = {"scoring.checks.registry": "scoring.judge.run"}

# `judge` names both a stage and the function users import from here; they get the function, as before.
# The stage's package (a docstring) loads now, and its name is taken back: loaded later, by whatever
# imports `scoring.judge.run` first, it would have been bound here in the function's place.
importlib.import_module("scoring.judge")
del globals()["judge"]

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if home in _FIRST:
        importlib.import_module(_FIRST[home])
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # read once: later reads find it here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

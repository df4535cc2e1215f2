"""Which specs set-based scoring can judge: the checks it compiles to SQL, and nothing else.

The compiled subset is the default profile's expected tools, argument specs, strict mode,
`forbidden_tools` and per-execution `latency.max_ms`, with `select` and `scope`. A spec with any
other check keeps the Python judge, whose verdicts the SQL ones must equal
(tests/scoring/batch/test_batch_parity.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from scoring.batch import _sql_literal as lit
from scoring.batch._family import shape
from scoring.batch._sql import verdict_query
from scoring.batch._sql_literal import NotCompilable
from scoring.checks import (
    catalogue,  # noqa: F401  (registers the catalogue: CHECKS is complete)
    registry,
)
from scoring.checks.registry import CHECKS
from scoring.spec.specs import CATALOGUE_KEYS, MULTITURN_KEYS, Spec

# The checks a verdict can hold, in registration order; any other (a user's) may apply to every spec.
BUILT_IN_CHECKS = (
    "expected_tool",
    "arguments",
    "latency",
    "schema",
    "argument_rules",
    "calls",
    "expect_no_tool_calls",
    "expect_tool_call",
    "trajectory",
    "before",
    "parallel",
    "require_executions_for_requests",
    "results",
    "result_shape",
    "flows",
    "idempotent_writes",
    "state",
)
_COMPILED_CATALOGUE = {"forbidden_tools"}


def _checks_are_built_in() -> bool:
    return (
        tuple(CHECKS) == BUILT_IN_CHECKS
        and CHECKS["expected_tool"] is registry.expected_tools
        and CHECKS["arguments"] is registry.arguments
        and CHECKS["latency"] is registry.latency
    )


def not_compiled(spec: Spec) -> str | None:
    """Why the spec is judged in Python, or None when SQL judges it."""
    if spec.profile != "default":
        return f"profile {spec.profile}"
    if spec.ignore_tools:
        return "ignore_tools"
    if spec.pass_threshold is not None:
        return "pass_threshold"
    if not _checks_are_built_in():
        return "a check registered outside tracescore"
    for key in (*CATALOGUE_KEYS, *MULTITURN_KEYS):
        if key not in _COMPILED_CATALOGUE and spec.catalogue_value(key) is not None:
            return key
    if spec.latency is not None and (spec.latency.percentiles or spec.latency.window is not None):
        return "latency percentiles"
    try:
        verdict_query(spec, "runs")  # values SQL cannot carry exactly (a NUL, a bound of 2**53 + 1)
    except NotCompilable as exc:
        return str(exc)
    return None


def not_compiled_each(specs: Sequence[Spec]) -> list[str | None]:
    """`not_compiled` of each spec, generating the query once per set of checks: specs that differ only
    in name and select (a thousand specs of a task each) compile alike, but for a name SQL cannot carry.
    Generating a spec's query costs ~0.4 ms, as much as judging a few runs."""
    by_shape: dict[str, str | None] = {}
    reasons: list[str | None] = []
    for spec in specs:
        key = shape(spec)
        if key not in by_shape:  # judged under a plain name: the name is checked on its own below
            by_shape[key] = not_compiled(spec.model_copy(update={"name": "spec"}))
        reason = by_shape[key]
        if reason is None:
            try:
                lit.string(spec.name)
            except NotCompilable as exc:
                reason = str(exc)
        reasons.append(reason)
    return reasons

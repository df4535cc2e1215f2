"""`require_executions_for_requests`: a tool call the model requested but the agent never carried out
(refused, dropped, paused before any span) fails the run. One check.
"""

from __future__ import annotations

from scoring.checks.reconcile import reference
from scoring.checks.registry import Scoped, register_check
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult


@register_check("require_executions_for_requests")
def require_executions_for_requests(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """One check: every tool call the model requested was carried out (errored or paused counts as
    carried out; the request was not ignored)."""
    if not spec.require_executions_for_requests:
        return []
    never = [r for r in evidence.requests if r.tool_name and not r.executed]
    if never:
        names = ", ".join(f"{r.tool_name} ({r.call_id})" if r.call_id else r.tool_name for r in never)
        detail = f"{len(never)} requested tool call(s) never executed: {names}"
    else:
        detail = f"each of {len(evidence.requests)} requested tool call(s) has an execution"
    observed = [{"tool": r.tool_name, "call_id": r.call_id, **reference(r)} for r in never]
    return [CheckResult("require_executions_for_requests", "requests", not never, detail, True, observed)]

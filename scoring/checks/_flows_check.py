"""The `flows` check, registered in the catalogue's order (its logic: scoring/checks/flows.py)."""

from __future__ import annotations

from scoring.checks.flows import KIND, flow_sources, judge_flow
from scoring.checks.registry import Scoped, register_check
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult


@register_check(KIND)
def flows(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """One check per flow of a run's spec (or of one turn of a conversation spec)."""
    checks = []
    for flow in spec.flows or []:
        check = judge_flow(
            flow, flow_sources(flow, evidence), evidence.clean_of(flow.target_tool), require_call=True
        )
        if check is not None:
            checks.append(check)
    return checks

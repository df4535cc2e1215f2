"""State checks (issue 21): `state: {/PATH: RULE}` on the environment's snapshot at the end of a run
or turn (`tracescore.state`, scoring/evidence/state.py), with the rules of `argument_rules`.

One check per path. Without a snapshot (or with one that is not JSON) the check cannot be judged: it
is unsatisfied, its detail starts with "error:" and its `observed` is `{"error": …}`; it never passes.
"""

from __future__ import annotations

from scoring.checks._paths import pointer
from scoring.checks._rules import rule_failure
from scoring.checks.registry import Scoped, register_check
from scoring.evidence.state import STATE_ATTRIBUTE, STATE_NAME
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult

KIND = "state"


@register_check(KIND)
def state(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    if not spec.state:
        return []
    snapshot = evidence.state()  # only now: reading stored spans costs a query
    checks = []
    for path, rule in spec.state.items():
        expected = {path: rule.model_dump(mode="json", exclude_none=True)}
        if snapshot is None or not snapshot.valid:
            why = (
                f"no {STATE_NAME} snapshot ({STATE_ATTRIBUTE}) in the run's traces"
                if snapshot is None
                else f"the {STATE_NAME} snapshot on span {snapshot.span_id} is not JSON"
            )
            detail = f"error: state {path or '/'} cannot be judged: {why}"
            checks.append(CheckResult(KIND, path, False, detail, expected=expected, observed={"error": why}))
            continue
        present, value = pointer(snapshot.value, path)
        failure = rule_failure(path or "state", rule, present, value)
        detail = f"state {failure}" if failure else f"state {path or '/'} meets its rule"
        observed = {"span_id": snapshot.span_id, "value": value if present else None, "present": present}
        checks.append(CheckResult(KIND, path, failure is None, detail, expected=expected, observed=observed))
    return checks

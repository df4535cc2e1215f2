"""Gates: rules that fail a run without being counted in its value (strict mode, forbidden tools).

A gate answers "may this run pass at all?", not "how much of the spec did it meet?": an agent that
called a forbidden tool but met every check still has value 1.0, and still fails.
"""

from __future__ import annotations

from scoring.checks.registry import Scoped
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult


def _attempted(evidence: Scoped) -> set[str]:
    """Names of errored, paused, and requested-but-never-executed calls (not replayed history)."""
    names = {e.tool_name for e in evidence.executions if (e.error or e.paused) and not e.from_history}
    names |= {r.tool_name for r in evidence.requests if not r.executed}
    return names


def additional_tools(spec: Spec, evidence: Scoped) -> list[str]:
    """Tool names the spec does not expect: clean executions, or every attempt if counted."""
    allowed = spec.expected_names
    names = {e.tool_name for e in evidence.clean}
    if spec.counts_attempts:
        names |= _attempted(evidence)
    return sorted(name for name in names if name and name not in allowed)


def strict_gate(spec: Spec, additional: list[str]) -> CheckResult | None:
    if spec.allows_additional:
        return None
    detail = f"unexpected tools: {', '.join(additional)}" if additional else "no unexpected tools"
    return CheckResult("strict", "additional_tools", not additional, detail, expected=spec.counts_attempts)


def forbidden_gate(spec: Spec, evidence: Scoped) -> CheckResult | None:
    """`forbidden_tools`: any clean execution of such a name fails the run (any attempt, with
    `strict_counts: attempts`)."""
    if not spec.forbidden_tools:
        return None
    names = {e.tool_name for e in evidence.clean}
    if spec.counts_attempts:
        names |= _attempted(evidence)
    hits = sorted(names & set(spec.forbidden_tools))
    verb = "attempted" if spec.counts_attempts else "ran"
    detail = f"forbidden tools {verb}: {', '.join(hits)}" if hits else "no forbidden tool ran"
    return CheckResult(
        "forbidden_tools",
        "forbidden_tools",
        not hits,
        detail,
        expected=list(spec.forbidden_tools),
        observed=hits,
    )

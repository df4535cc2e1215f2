"""Cardinality checks: `calls` (how often each tool ran cleanly) and BFCL's relevance/irrelevance pair
`expect_tool_call` / `expect_no_tool_calls`. Strict mode deliberately checks names only; these count.
"""

from __future__ import annotations

from scoring.checks.registry import Scoped, attempt_states, register_check
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult


def _wanted(low: int, high: int | None) -> str:
    if high is None:
        return f"at least {low}"
    if low == high:
        return f"exactly {low}"
    return f"at most {high}" if low == 0 else f"between {low} and {high}"


@register_check("calls")
def calls(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """One check per tool: the number of its clean executions is within the bounds."""
    results = []
    for tool, count in (spec.calls or {}).items():
        low, high = count.bounds
        ran = len(evidence.clean_in_scope(spec, "calls", tool))
        ok = ran >= low and (high is None or ran <= high)
        detail = f"{tool} ran cleanly {ran} time(s); expected {_wanted(low, high)}"
        states = attempt_states(tool, evidence) if ran < low else []
        if states:
            detail += f" ({'; '.join(states)})"
        expected = count.model_dump(mode="json", exclude_none=True)
        results.append(CheckResult("calls", tool, ok, detail, expected=expected, observed=ran))
    return results


def _names(evidence: Scoped) -> list[str]:
    return sorted({e.tool_name for e in evidence.clean})


def _attempts(evidence: Scoped) -> str:
    """Calls that were tried but never ran cleanly: they neither satisfy nor fail these checks."""
    tried = sorted(
        {e.tool_name for e in evidence.executions if e.tool_name and not e.clean and not e.from_history}
        | {r.tool_name for r in evidence.requests if r.tool_name and not r.executed}
    )
    return f"; attempted without a clean execution: {', '.join(tried)}" if tried else ""


@register_check("expect_no_tool_calls")
def expect_no_tool_calls(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """BFCL irrelevance: no clean execution at all."""
    if not spec.expect_no_tool_calls:
        return []
    names = _names(evidence)
    clean = len(evidence.clean)
    if names:
        detail = f"expected no tool call, but {clean} clean execution(s) ran: {', '.join(names)}"
    else:
        detail = "no tool ran cleanly" + _attempts(evidence)
    return [CheckResult("expect_no_tool_calls", "*", not names, detail, expected=True, observed=names)]


@register_check("expect_tool_call")
def expect_tool_call(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """BFCL relevance: any clean execution, whatever its name and arguments."""
    if not spec.expect_tool_call:
        return []
    names = _names(evidence)
    if names:
        detail = f"{len(evidence.clean)} clean tool execution(s): {', '.join(names)}"
    else:
        detail = "expected a tool call, but no tool ran cleanly" + _attempts(evidence)
    return [CheckResult("expect_tool_call", "*", bool(names), detail, expected=True, observed=names)]

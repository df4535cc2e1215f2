"""One run, one spec → one verdict, under the default profile (the evidence rule, DESIGN §6)."""

from __future__ import annotations

from scoring._checks import CHECKS, Scoped
from scoring._evidence import Evidence
from scoring._reliability import judge_reliability
from scoring._spec import Spec
from scoring._verdict import CheckResult, Verdict


def _is_leader(agent_path: str | None) -> bool:
    return agent_path is None or "/" not in agent_path


def scoped(spec: Spec, evidence: Evidence) -> tuple[Scoped, int]:
    """The evidence the spec may see, and how many member executions `scope: leader` left out."""
    if spec.scope == "all":
        return Scoped(evidence.executions, evidence.requests), 0
    executions = tuple(e for e in evidence.executions if _is_leader(e.agent_path))
    requests = tuple(r for r in evidence.requests if _is_leader(r.agent_path))
    return Scoped(executions, requests), len(evidence.executions) - len(executions)


def _additional(spec: Spec, evidence: Scoped) -> list[str]:
    """Tool names outside expected_tools ∪ arguments: clean executions, or every attempt if counted."""
    allowed = set(spec.expected_tools or []) | set(spec.arguments or {})
    names = {e.tool_name for e in evidence.clean}
    if spec.counts_attempts:
        names |= {e.tool_name for e in evidence.executions if (e.error or e.paused) and not e.from_history}
        names |= {r.tool_name for r in evidence.requests if not r.executed}
    return sorted(name for name in names if name and name not in allowed)


def judge(spec: Spec, evidence: Evidence) -> Verdict:
    if spec.profile == "reliability_eval":
        return judge_reliability(spec, evidence)
    view, left_out = scoped(spec, evidence)
    checks: list[CheckResult] = []
    for check in CHECKS.values():
        checks.extend(check(spec, view))
    additional = _additional(spec, view)
    strict_failed = not spec.allows_additional and bool(additional)
    gates: tuple[CheckResult, ...] = ()
    if not spec.allows_additional:
        detail = f"unexpected tools: {', '.join(additional)}" if additional else "no unexpected tools"
        gates = (
            CheckResult(
                "strict", "additional_tools", not strict_failed, detail, expected=spec.counts_attempts
            ),
        )

    notes = []
    if not evidence.executions:  # at all: a leader-scoped run whose members ran tools had executions
        notes.append("run has no tool executions")
    notes.extend(c.detail for c in checks if not c.satisfied and c.kind != "latency")
    if strict_failed:
        notes.append(f"unexpected tools not allowed: {', '.join(additional)}")
    notes.extend(c.detail for c in checks if not c.satisfied and c.kind == "latency")
    if not checks:  # only latency bounds, none of which applied: nothing failed, nothing to measure
        notes.append("no check applied: no clean execution of a tool with a latency bound")
    if left_out:
        notes.append(f"{left_out} member execution(s) left out (scope: leader)")

    satisfied = sum(1 for c in checks if c.satisfied)
    value = satisfied / len(checks) if checks else None
    passed = satisfied == len(checks) and not strict_failed
    missing = tuple(
        f"{c.target} ({'; '.join(c.observed)})" if c.observed else c.target
        for c in checks
        if c.kind == "expected_tool" and not c.satisfied
    )
    return Verdict(
        run_id=evidence.run.run_id,
        trace_id=evidence.run.trace_id,
        task=evidence.run.task_id,
        spec=spec.name,
        spec_fingerprint=spec.fingerprint,
        profile=spec.profile,
        passed=passed,
        value=value,
        label="pass" if passed else "fail",
        checks=tuple(checks),
        missing_tools=missing,
        additional_tools=tuple(additional) if (not spec.allows_additional or additional) else (),
        failed_argument_checks=tuple(
            {"tool": c.target, "arguments": c.expected}
            for c in checks
            if c.kind == "arguments" and not c.satisfied
        ),
        latency_violations=tuple(v for c in checks if c.kind == "latency" for v in c.observed),
        reason="; ".join(notes) or None,
        run_version=evidence.run.version,
        gates=gates,
    )

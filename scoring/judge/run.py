"""One run, one spec → one verdict, under the default profile (the evidence rule, DESIGN §6)."""

from __future__ import annotations

from typing import Any

from scoring.checks import catalogue  # noqa: F401  (registers the check catalogue after the built-ins)
from scoring.checks.credit import credit
from scoring.checks.gates import additional_tools, forbidden_gate, strict_gate
from scoring.checks.latency_history import DETAIL_KEY, samples
from scoring.checks.reconcile import reconcile
from scoring.checks.registry import CHECKS
from scoring.evidence.runs import Evidence
from scoring.judge._reliability import judge_reliability
from scoring.judge._scope import scoped
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult, Verdict


def _nothing_applied(spec: Spec) -> list[str]:
    """Why a spec made no check on this run: its checks apply only to tools that ran (or per task)."""
    conditional = []
    if spec.latency is not None and spec.latency.max_ms is not None:
        conditional.append("a latency bound")
    if spec.schema_ is not None:
        conditional.append("a schema")
    notes = (
        [f"no check applied: no clean execution of a tool with {' or '.join(conditional)}"]
        if conditional
        else []
    )
    if spec.latency is not None and spec.latency.percentiles:
        notes.append("latency percentiles are judged per task over its runs (tracescore report)")
    return notes


def _reached(spec: Spec, satisfied: int, total: int, value: float | None) -> bool:
    """Every check satisfied, or, under `pass_threshold`, a value that reaches it (no check applied:
    nothing failed, as without a threshold)."""
    if spec.pass_threshold is None or value is None:
        return satisfied == total
    return value >= spec.pass_threshold


def judge(spec: Spec, evidence: Evidence) -> Verdict:
    if spec.profile == "reliability_eval":
        return judge_reliability(spec, evidence)
    view, left_out = scoped(spec, evidence)
    checks: list[CheckResult] = []
    for check in CHECKS.values():
        checks.extend(check(spec, view))
    additional = additional_tools(spec, view)
    gates = tuple(g for g in (strict_gate(spec, additional), forbidden_gate(spec, view)) if g is not None)
    failed_gates = [g for g in gates if not g.satisfied]

    notes = []
    # At all: a leader-scoped run whose members ran tools had executions. Not said where the spec asks
    # for no tool call: there it is what was asked, and read as the cause of a failure it misled.
    if not evidence.executions and not spec.expect_no_tool_calls:
        notes.append("run has no tool executions")
    notes.extend(c.detail for c in checks if not c.satisfied and c.kind != "latency")
    for gate in failed_gates:
        notes.append(
            f"unexpected tools not allowed: {', '.join(additional)}" if gate.kind == "strict" else gate.detail
        )
    notes.extend(c.detail for c in checks if not c.satisfied and c.kind == "latency")
    if not checks:
        notes.extend(_nothing_applied(spec))
    if left_out:
        notes.append(f"{left_out} member execution(s) left out (scope: leader)")

    satisfied = sum(1 for c in checks if c.satisfied)
    value = sum(credit(c) for c in checks) / len(checks) if checks else None
    passed = _reached(spec, satisfied, len(checks), value) and not failed_gates
    if spec.pass_threshold is not None and value is not None and satisfied < len(checks):
        reached = "reaches" if value >= spec.pass_threshold else "is below"
        notes.append(f"value {value:.4g} {reached} pass_threshold {spec.pass_threshold:g}")
    missing = tuple(
        f"{c.target} ({'; '.join(c.observed)})" if c.observed else c.target
        for c in checks
        if c.kind == "expected_tool" and not c.satisfied
    )
    detail: dict[str, Any] = {"reconciliation": reconcile(view)}
    history = samples(spec, view)
    if history is not None:
        detail[DETAIL_KEY] = history
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
        detail=detail,
    )

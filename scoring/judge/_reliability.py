"""`profile: reliability_eval`: the verdicts Agno's ReliabilityEval (2.8+) gives on the same evidence.

Rule numbers (R9, R12, …) refer to ../shared/reference/agno-scorer-semantics.md; docs/scoring.md has
the table of differences from the default profile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scoring.checks.matching import matches_subset
from scoring.checks.reconcile import reconcile
from scoring.judge._scope import scoped
from scoring.verdict.record import CheckResult, Verdict

if TYPE_CHECKING:
    from scoring.evidence.runs import Evidence
    from scoring.spec.specs import Spec


def _args(arguments: Any) -> dict[str, Any]:
    return arguments if isinstance(arguments, dict) else {}  # tool_args=None counts as {}


def judge_reliability(spec: Spec, evidence: Evidence) -> Verdict:
    view, _ = scoped(spec, evidence)
    expected = spec.expected_tools
    allowed = set(expected) if expected is not None else set()
    lenient = spec.allows_additional
    named = [e for e in view.executions if e.tool_name and not e.from_history]  # R8
    failed_calls: list[str] = []
    additional: list[str] = []

    for execution in named:  # R9, R10: strict mode polices attempts, one entry per execution
        unexpected = expected is not None and execution.tool_name not in allowed
        counted = spec.counts_attempts or execution.clean
        if unexpected and counted:
            (additional if lenient else failed_calls).append(execution.tool_name)
    if expected is not None and spec.counts_attempts:  # R12: requested names with no execution at all
        executed = {e.tool_name for e in named}
        for name in sorted({r.tool_name for r in view.requests if r.tool_name} - executed):
            if name not in allowed:
                (additional if lenient else failed_calls).append(name)

    clean_names = {e.tool_name for e in named if e.clean}
    attempted = {e.tool_name for e in named} | {r.tool_name for r in view.requests}
    missing: list[str] = []
    checks: list[CheckResult] = []
    for name in expected or []:  # R13: declared order, duplicates repeat
        if name in clean_names:
            if not any(c.target == name for c in checks):
                checks.append(CheckResult("expected_tool", name, True, f"{name} ran cleanly"))
            continue
        note = f"{name} (requested but refused/errored/paused)" if name in attempted else name
        missing.append(note)
        if not any(c.target == name for c in checks):
            checks.append(
                CheckResult("expected_tool", name, False, f"expected tool {note} has no clean execution")
            )

    failed_arguments: list[dict[str, Any]] = []
    missing_names = {name for name in expected or [] if name not in clean_names}
    for tool in spec.arguments or {}:  # R14: one result per tool; a missing tool is not checked again
        if tool in missing_names:
            continue
        specs = spec.argument_specs(tool)
        candidates = [  # arguments that are not JSON count as {}: the call ran, its values cannot match
            _args(e.arguments) if e.arguments_valid else {} for e in named if e.clean and e.tool_name == tool
        ]
        ok = bool(candidates) and all(any(matches_subset(s, c) for c in candidates) for s in specs)
        detail = (
            f"every argument spec of {tool} matched a clean call"
            if ok
            else (
                f"no clean {tool} execution"
                if not candidates
                else f"some argument spec of {tool} matched no clean call"
            )
        )
        checks.append(CheckResult("arguments", tool, ok, detail, expected=specs, observed=len(candidates)))
        if not ok:
            failed_arguments.append({"tool": tool, "arguments": specs})

    passed = not failed_calls and not missing and not failed_arguments  # R16
    notes = []
    if spec.checks_nothing:  # accepted with a warning at load, as Agno's ReliabilityEval passes it
        notes.append("the spec checks nothing: every run passes under profile reliability_eval")
    if not view.executions:
        notes.append("run has no tool executions")
    notes.extend(f"expected tool {m} has no clean execution" for m in missing)
    notes.extend(f"arguments of {f['tool']} did not match" for f in failed_arguments)
    if failed_calls:
        notes.append(f"unexpected tool calls not allowed: {', '.join(failed_calls)}")
    gates: tuple[CheckResult, ...] = ()
    if not lenient and expected is not None:
        gates = (
            CheckResult(
                "strict",
                "additional_tools",
                not failed_calls,
                f"unexpected: {', '.join(failed_calls)}" if failed_calls else "no unexpected tools",
            ),
        )
    return Verdict(
        run_id=evidence.run.run_id,
        trace_id=evidence.run.trace_id,
        task=evidence.run.task_id,
        spec=spec.name,
        spec_fingerprint=spec.fingerprint,
        profile=spec.profile,
        passed=passed,
        value=None,
        label="pass" if passed else "fail",
        checks=tuple(checks),
        missing_tools=tuple(missing),
        additional_tools=tuple(failed_calls or additional),
        failed_argument_checks=tuple(failed_arguments),
        latency_violations=(),
        reason="; ".join(notes) or None,
        run_version=evidence.run.version,
        gates=gates,
        detail={"reconciliation": reconcile(view)},
    )

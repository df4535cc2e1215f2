"""Idempotent writes (issue 21): `idempotent_writes: {tools: [WRITE, …], reads: [READ, …]}`.

The "write succeeded, response lost" case: a write errors (or times out, which a tool span records as
an error), yet it may have taken effect; writing again with the same arguments can do it twice. For
each write tool, a violation is a pair of its executions A then B with equal arguments (JSON equality;
arguments not captured on either side are never called equal) where A errored, B started after A
ended, and no clean execution of a `reads` tool started after A ended and ended before B started (a
read that could have shown whether A took effect). Executions replayed from history are left out.
"""

from __future__ import annotations

from typing import Any

from scoring.checks.matching import json_equal
from scoring.checks.registry import Scoped, register_check
from scoring.evidence.runs import Execution
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult

KIND = "idempotent_writes"


def _same_arguments(a: Execution, b: Execution) -> bool:
    if not (a.arguments_valid and b.arguments_valid) or a.arguments is None or b.arguments is None:
        return False
    return json_equal(a.arguments, b.arguments)


def blind_retries(writes: list[Execution], reads: list[Execution]) -> list[dict[str, Any]]:
    """Each errored write repeated with the same arguments and no read in between."""
    found = []
    for i, first in enumerate(writes):
        if not first.error:
            continue
        for again in writes[i + 1 :]:
            if again.start_ns < first.end_ns or not _same_arguments(first, again):
                continue
            checked = any(first.end_ns <= r.start_ns and r.end_ns <= again.start_ns for r in reads)
            if not checked:
                found.append(
                    {"errored": first.span_id, "repeated": again.span_id, "arguments": first.arguments}
                )
            break  # the next same-arguments write answers for this error; later ones pair with it
    return found


@register_check(KIND)
def idempotent_writes(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """One check per write tool."""
    rule = spec.idempotent_writes
    if rule is None:
        return []
    reads = [e for e in evidence.executions if e.clean and e.tool_name in set(rule.reads)]
    checks = []
    for tool in dict.fromkeys(rule.tools):
        writes = sorted(
            (e for e in evidence.executions if e.tool_name == tool and not e.from_history),
            key=lambda e: (e.start_ns, e.span_id),
        )
        retries = blind_retries(writes, reads)
        if retries:
            first = retries[0]
            between = f"no {' or '.join(rule.reads)} read" if rule.reads else "no read declared"
            detail = (
                f"{tool} errored (call {first['errored']}) and was executed again with the same arguments "
                f"(call {first['repeated']}) with {between} in between"
            )
            if len(retries) > 1:
                detail += f" ({len(retries)} such repeats)"
        else:
            errored = sum(1 for w in writes if w.error)
            detail = (
                f"no {tool} write repeated blindly after an error "
                f"({len(writes)} execution(s), {errored} errored)"
            )
        expected = {"tools": list(rule.tools), "reads": list(rule.reads)}
        checks.append(CheckResult(KIND, tool, not retries, detail, expected=expected, observed=retries))
    return checks

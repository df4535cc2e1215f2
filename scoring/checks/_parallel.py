"""`parallel`: the listed tools ran (cleanly) in at most `max_rounds` rounds.

A round is what the model asked for at once. The request side says it best: one chat span's tool calls
are one round (`tool_requests.round`, and the request each execution answered). When some execution
answered no captured request (content capture off, a framework that records no chat span), rounds come
from the executions themselves: calls whose intervals overlap ran in parallel, so each maximal group of
overlapping intervals is one round. The verdict says which source it used.
"""

from __future__ import annotations

from typing import Any

from scoring.checks._trajectory import rounds_of
from scoring.checks.registry import Scoped, register_check
from scoring.evidence.runs import Execution
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult


def interval_rounds(calls: list[Execution]) -> list[list[Execution]]:
    """Maximal groups of overlapping execution intervals, in time order (touching is not overlapping)."""
    rounds: list[list[Execution]] = []
    end = 0
    for call in sorted(calls, key=lambda c: (c.start_ns, c.end_ns)):
        if rounds and call.start_ns < end:
            rounds[-1].append(call)
            end = max(end, call.end_ns)
        else:
            rounds.append([call])
            end = call.end_ns
    return rounds


def request_rounds(
    calls: list[Execution], round_of: dict[tuple[str, int], tuple[int, str]]
) -> list[list[Execution]]:
    """Calls grouped by the chat span that requested them (a run's traces each number their rounds
    from 1, so the chat span, not the number, identifies a round), in round order."""
    grouped: dict[tuple[int, str], list[Execution]] = {}
    for call in calls:
        grouped.setdefault(round_of[call.key], []).append(call)
    return [grouped[key] for key in sorted(grouped)]


@register_check("parallel")
def parallel(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    if spec.parallel is None:
        return []
    tools, limit = spec.parallel.tools, spec.parallel.max_rounds
    wanted = set(tools)
    calls = [e for e in evidence.clean if e.tool_name in wanted]
    missing = [t for t in dict.fromkeys(tools) if not any(c.tool_name == t for c in calls)]
    round_of = rounds_of(evidence)
    unanswered = sum(1 for c in calls if c.key not in round_of)
    if calls and not unanswered:
        source, rounds = "requests", request_rounds(calls, round_of)
        how = "rounds from the chat spans that requested them"
    else:
        source, rounds = "intervals", interval_rounds(calls)
        how = "rounds from overlapping execution intervals"
        if calls and unanswered < len(calls):
            how += f" ({unanswered} of {len(calls)} call(s) answered no captured request)"
    ok = not missing and len(rounds) <= limit
    if missing:
        detail = f"parallel: no clean execution of {', '.join(missing)}"
    else:
        names = ", ".join(dict.fromkeys(tools))
        detail = f"parallel: {names} ran in {len(rounds)} round(s), at most {limit} allowed"
    detail += f"; {how}"
    observed: dict[str, Any] = {
        "source": source,
        "rounds": [[c.tool_name for c in group] for group in rounds],
        "missing": missing,
    }
    expected = spec.parallel.model_dump(mode="json")
    return [CheckResult("parallel", ",".join(dict.fromkeys(tools)), ok, detail, expected, observed)]

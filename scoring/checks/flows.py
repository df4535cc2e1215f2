"""Data flow (issue 21): `flows: [{from: TOOL.result.PATH, to: TOOL.arguments.PATH}]`.

Every clean call of the `to` tool must pass, at its argument path, a value equal (JSON equality) to
what a clean execution of the `from` tool returned at its result path, and that execution must have
ended before the call started: the model reused `f17`, it did not guess it. The values may come from
the same run or, in a conversation, from an earlier turn (`Scoped.earlier`). A flow whose `to` tool
never ran cleanly fails: nothing carried the value. The check itself is registered by `_flows_check`
in the catalogue's order; this module holds what a conversation's judge uses too.
"""

from __future__ import annotations

import json
from typing import Any

from scoring.checks._paths import dotted
from scoring.checks.matching import json_equal
from scoring.checks.registry import Scoped
from scoring.evidence.runs import Execution
from scoring.spec.multiturn_models import Flow
from scoring.verdict.record import CheckResult

KIND = "flows"


def compact(value: Any) -> str:
    # As the argument rules write values; not imported from there, whose import registers its check
    # (this module is public, imported before the catalogue sets the checks' order).
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)


def _returned(flow: Flow, source: Execution) -> tuple[bool, Any]:
    captured, value = source.result
    if not captured:
        return False, None
    return (True, value) if flow.source_path is None else dotted(value, flow.source_path)


def call_problem(flow: Flow, call: Execution, sources: list[Execution]) -> tuple[str | None, Any]:
    """Why one `to` call breaks the flow (None: it carries an earlier returned value), and what it passed."""
    passed = dotted(call.arguments, flow.target_path) if isinstance(call.arguments, dict) else (False, None)
    if not passed[0]:
        return f"{flow.target_tool} call {call.span_id} has no argument {flow.target_path}", None
    earlier = [s for s in sources if s.end_ns <= call.start_ns]
    values = [value for present, value in (_returned(flow, s) for s in earlier) if present]
    if any(json_equal(value, passed[1]) for value in values):
        return None, passed[1]
    if not earlier:
        why = f"no clean {flow.source_tool} execution ended before it"
    elif not values:
        why = f"no earlier {flow.source_tool} result has {flow.source_path or 'a captured value'}"
    else:
        why = f"earlier {flow.source_tool} results gave {compact(values)[:120]}"
    return (
        f"{flow.target_tool} call {call.span_id} passed {compact(passed[1])[:80]}, "
        f"not a returned value ({why})",
        passed[1],
    )


def judge_flow(
    flow: Flow, sources: list[Execution], calls: list[Execution], *, require_call: bool
) -> CheckResult | None:
    """The flow's check over these `to` calls, with values from these `from` executions; None when there
    is no call and none is required (a turn of a conversation whose call is in another turn)."""
    if not calls:
        if not require_call:
            return None
        detail = f"flow {flow.label}: no clean {flow.target_tool} call to carry the value"
        return CheckResult(KIND, flow.label, False, detail, expected=_expected(flow), observed=[])
    observed, problems = [], []
    for call in calls:
        problem, passed = call_problem(flow, call, sources)
        observed.append({"span_id": call.span_id, "passed": passed, "broken": problem})
        if problem:
            problems.append(problem)
    if problems:
        detail = f"flow {flow.label} broken: {problems[0]}"
        if len(problems) > 1:
            detail += f" (and {len(problems) - 1} more call(s))"
    else:
        detail = f"flow {flow.label}: {len(calls)} {flow.target_tool} call(s) used a value returned earlier"
    return CheckResult(KIND, flow.label, not problems, detail, expected=_expected(flow), observed=observed)


def _expected(flow: Flow) -> dict[str, str]:
    return {"from": flow.source, "to": flow.target}


def flow_sources(flow: Flow, evidence: Scoped) -> list[Execution]:
    pool = (*evidence.earlier, *evidence.executions)
    return [e for e in pool if e.clean and e.tool_name == flow.source_tool]

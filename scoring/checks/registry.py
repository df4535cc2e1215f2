"""Checks: small functions behind one protocol, registered by name.

Built-ins register through the same door a user's check would (`@register_check`). A check sees the
spec and the run's evidence (already narrowed to the spec's scope) and returns one result per check
it makes; only clean executions may satisfy anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scoring.checks.matching import matches_subset
from scoring.evidence.definitions import DefinitionSource, no_definitions
from scoring.evidence.runs import Execution, Request
from scoring.evidence.state import StateSource, no_state
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult


@dataclass(slots=True)
class Scoped:
    """A run's evidence as one spec sees it (after `scope`)."""

    executions: tuple[Execution, ...]
    requests: tuple[Request, ...]
    # Tool definitions captured in the run's traces (`schema: from_trace`); read from storage on call.
    definitions: DefinitionSource = field(default=no_definitions)
    # The run's state snapshot (`state` checks) and the earlier turns' executions (`flows`).
    state: StateSource = field(default=no_state)
    earlier: tuple[Execution, ...] = ()

    @property
    def clean(self) -> tuple[Execution, ...]:
        return tuple(e for e in self.executions if e.clean)

    def clean_of(self, tool: str) -> list[Execution]:
        return [e for e in self.executions if e.clean and e.tool_name == tool]

    def clean_in_scope(self, spec: Spec, key: str, tool: str) -> list[Execution]:
        """Clean executions of a tool for the check `key`: the earlier turns' first when the turn's
        `conversation_scope` names the check (BFCL accepts a result from this turn or any before)."""
        here = self.clean_of(tool)
        if key not in (spec.conversation_scope or ()):
            return here
        return [e for e in self.earlier if e.clean and e.tool_name == tool] + here


CheckFunction = Callable[[Spec, Scoped], list[CheckResult]]
CHECKS: dict[str, CheckFunction] = {}


def register_check(kind: str) -> Callable[[CheckFunction], CheckFunction]:
    def register(function: CheckFunction) -> CheckFunction:
        if kind in CHECKS:
            raise ValueError(f"a check named {kind!r} is already registered")
        CHECKS[kind] = function
        return function

    return register


def settle_order(modules: Sequence[str]) -> None:
    """Order the registered checks by the module that registered each, in this order (a module's own in
    the order it registered them), then every other check in the order it was registered."""
    rank = {module: position for position, module in enumerate(modules)}
    ordered = sorted(CHECKS.items(), key=lambda item: rank.get(item[1].__module__, len(rank)))
    CHECKS.clear()
    CHECKS.update(ordered)


def attempt_states(tool: str, evidence: Scoped) -> list[str]:
    """How a tool with no clean execution was nonetheless attempted, for people reading a failure."""
    states = []
    named = [e for e in evidence.executions if e.tool_name == tool and not e.from_history]
    if any(e.error for e in named):
        states.append("errored")
    if any(e.paused for e in named):
        states.append("paused")
    if any(r.tool_name == tool and not r.executed for r in evidence.requests):
        states.append("requested but never executed")
    return states


def _compact(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


@register_check("expected_tool")
def expected_tools(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    clean_names = {e.tool_name for e in evidence.clean}
    results = []
    for tool in dict.fromkeys(spec.expected_tools or []):  # duplicates count once
        if tool in clean_names:
            results.append(CheckResult("expected_tool", tool, True, f"{tool} ran cleanly"))
            continue
        states = attempt_states(tool, evidence)
        how = f" ({'; '.join(states)})" if states else ""
        results.append(
            CheckResult(
                "expected_tool",
                tool,
                False,
                f"expected tool {tool} has no clean execution{how}",
                observed=states,
            )
        )
    return results


@register_check("arguments")
def arguments(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    results = []
    for tool in spec.arguments or {}:
        calls = [e for e in evidence.clean if e.tool_name == tool]
        for expected in spec.argument_specs(tool):
            satisfied = any(  # arguments that are not JSON match `{}` (any clean call) and nothing else
                matches_subset(expected, call.arguments if call.arguments_valid else None) for call in calls
            )
            if satisfied:
                detail = f"a clean {tool} call has arguments {_compact(expected)}"
            elif not calls:
                detail = f"no clean {tool} execution to match arguments {_compact(expected)}"
            else:
                detail = (
                    f"no clean {tool} execution matches arguments {_compact(expected)} "
                    f"({len(calls)} clean call(s))"
                )
            results.append(
                CheckResult("arguments", tool, satisfied, detail, expected=expected, observed=len(calls))
            )
    return results


@register_check("latency")
def latency(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    if spec.latency is None or spec.latency.max_ms is None:
        return []  # percentile bounds are judged per task (scoring/checks/latency_history.py)
    bounds = spec.latency.max_ms
    by_bound: dict[str, list[Execution]] = {}
    for execution in evidence.clean:
        key = execution.tool_name if execution.tool_name in bounds else "*"
        if key in bounds:
            by_bound.setdefault(key, []).append(execution)
    results = []
    for key, executions in by_bound.items():
        limit = bounds[key]
        slow: list[dict[str, Any]] = [
            {"tool": e.tool_name, "span_id": e.span_id, "duration_ms": e.duration_ms, "max_ms": limit}
            for e in executions
            if e.duration_ms > limit
        ]
        target = "other tools" if key == "*" else key
        if slow:
            worst = max(v["duration_ms"] for v in slow)
            detail = f"{len(slow)} of {len(executions)} {target} execution(s) slower than {limit:g} ms"
            detail += f" (slowest {worst:.4g} ms)"
        else:
            detail = f"{len(executions)} {target} execution(s) within {limit:g} ms"
        results.append(
            CheckResult("latency", key, not slow, detail, expected={"max_ms": limit}, observed=slow)
        )
    return results

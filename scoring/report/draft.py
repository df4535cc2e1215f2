"""A spec drafted from chosen runs (`tracescore spec draft`): what every one of them did, as checks they
all pass, each line with its evidence. A starting point the user edits, never a finished spec.

From the runs' tool executions (handoffs left out, as a spec leaves them out unless it names them):
the tools every run used (`expected_tools`), argument values constant over every clean call
(`arguments`), varying ones as `argument_rules` (`any_of` of the values seen, a numeric `range`), call
counts (`calls`), the order when every run agreed (`trajectory`, strict), latency bounds from the
slowest observed call with a stated margin (`latency.max_ms`), and `allow_additional: false` when the
set of tools never varied. Then the draft is judged on every one of its runs by the judge itself: a
check one of them fails is taken out (and said so), so a draft never fails its own runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from scoring.evidence.runs import TOOL, Evidence, Execution
from scoring.judge.scorer import score_evidence
from scoring.spec.specs import Spec

_MAX_ANY_OF = 10  # more distinct values than this say nothing a reader would keep
_SCALARS = (str, int, float, bool)


@dataclass(slots=True)
class Draft:
    spec: dict[str, Any]
    # Top-level key -> the evidence behind it, written as a comment on its line.
    evidence: dict[str, str] = field(default_factory=dict)
    # What was drafted and then taken out because a run failed it.
    removed: list[str] = field(default_factory=list)

    def yaml(self) -> str:
        runs = self.evidence.get("name", "")
        lines = [
            "# Drafted by `tracescore spec draft` from " + runs + ": a starting point to edit, not a",
            "# finished spec. Every run it was drafted from passes it; say what a good run must do.",
        ]
        lines += [f"# taken out: {why}" for why in self.removed]
        for key, value in self.spec.items():
            text = yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, width=100).rstrip()
            first, _, rest = text.partition("\n")
            note = self.evidence.get(key)
            lines.append(f"{first}  # {note}" if note and key != "name" else first)
            if rest:
                lines.append(rest)
        return "\n".join(lines) + "\n"


def _tools(evidence: Evidence) -> list[Execution]:
    return sorted((e for e in evidence.executions if e.kind == TOOL), key=lambda e: (e.start_ns, e.span_id))


def _rule(values: list[Any]) -> dict[str, Any] | None:
    if not all(isinstance(v, _SCALARS) for v in values):
        return None
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) == len(values) and len(set(numbers)) > 2:
        return {"range": [min(numbers), max(numbers)]}
    distinct = list(dict.fromkeys(values))
    return {"any_of": distinct} if len(distinct) <= _MAX_ANY_OF else None


def _arguments(tool: str, calls: list[Execution], n: int) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(constant arguments, rules for the varying ones, evidence) over the tool's clean calls."""
    clean = [c for c in calls if c.clean and isinstance(c.arguments, dict)]
    if not clean:
        return {}, {}, ""
    keys = sorted({k for c in clean for k in c.arguments})
    constant: dict[str, Any] = {}
    rules: dict[str, Any] = {}
    for key in keys:
        present = [c.arguments[key] for c in clean if key in c.arguments]
        if len(present) == len(clean) and all(v == present[0] for v in present):
            constant[key] = present[0]
            continue
        rule = _rule(present)
        if rule is not None:
            if len(present) < len(clean):
                rule["optional"] = True
            rules[key] = rule
    return constant, rules, f"{len(clean)} clean call(s) in {n} run(s)"


# A bound below this is noise: a tool that took 0.3 ms in the runs drafted from is not broken at 2 ms.
MIN_LATENCY_MS = 100


def _latency(calls: list[Execution], margin: float) -> int | None:
    durations = [c.duration_ms for c in calls if c.duration_ms is not None]
    if not durations:
        return None
    return max(MIN_LATENCY_MS, math.ceil(max(durations) * (1 + margin)))


def draft_spec(runs: Sequence[Evidence], name: str, *, margin: float = 0.5) -> Draft:
    """A spec every one of `runs` passes. Raises ValueError when there is no run to draft from."""
    if not runs:
        raise ValueError("no complete run was chosen: nothing to draft from")
    n = len(runs)
    per_run = [_tools(e) for e in runs]
    used = [{c.tool_name for c in calls} for calls in per_run]
    # Expected: what every run ran cleanly (the evidence rule: an errored or paused call is no proof).
    every = sorted(set.intersection(*({c.tool_name for c in calls if c.clean} for calls in per_run)))
    draft = Draft({"name": name}, {"name": f"{n} run(s)"})
    tasks = {e.run.task_id for e in runs}
    if len(tasks) == 1 and None not in tasks:
        draft.spec["select"] = {"task": tasks.pop()}
        draft.evidence["select"] = f"the task of all {n} run(s)"
    if not every:
        draft.spec["expect_no_tool_calls" if not set.union(*used) else "expect_tool_call"] = True
        return _verified(draft, runs)
    draft.spec["expected_tools"] = every
    draft.evidence["expected_tools"] = f"used in all {n} run(s)"
    if all(u == used[0] for u in used):
        draft.spec["allow_additional"] = False
        draft.evidence["allow_additional"] = f"the same tool set in all {n} run(s)"
    calls_of = {t: [c for calls in per_run for c in calls if c.tool_name == t] for t in every}
    arguments, rules = {}, {}
    for tool in every:
        constant, varying, _ = _arguments(tool, calls_of[tool], n)
        if constant:
            arguments[tool] = constant
        if varying:
            rules[tool] = {"values": varying}
    if arguments:
        draft.spec["arguments"] = arguments
        draft.evidence["arguments"] = f"the same value in every clean call of {n} run(s)"
    if rules:
        draft.spec["argument_rules"] = rules
        draft.evidence["argument_rules"] = f"the values seen over {n} run(s)"
    counts = {t: [sum(1 for c in calls if c.tool_name == t) for calls in per_run] for t in every}
    draft.spec["calls"] = {
        t: {"exactly": c[0]} if len(set(c)) == 1 else {"min": min(c), "max": max(c)}
        for t, c in counts.items()
    }
    draft.evidence["calls"] = f"executions per run over {n} run(s)"
    orders = [[c.tool_name for c in calls] for calls in per_run]
    if all(o == orders[0] for o in orders):
        draft.spec["trajectory"] = {"mode": "strict", "tools": orders[0]}
        draft.evidence["trajectory"] = f"the same order in all {n} run(s)"
    bounds = {t: b for t in every if (b := _latency(calls_of[t], margin)) is not None}
    if bounds:
        draft.spec["latency"] = {"max_ms": bounds}
        draft.evidence["latency"] = (
            f"slowest call seen over {n} run(s) + {margin:.0%}, at least {MIN_LATENCY_MS} ms"
        )
    return _verified(draft, runs)


# Checks and gates as the verdict names them -> the spec key that made them.
_KEY_OF_KIND = {"strict": "allow_additional", "expected_tool": "expected_tools"}


def _take_out(draft: Draft, kind: str, target: str) -> str | None:
    """Take out what made the unmet check `kind` on `target`: the tool's entry where the key is keyed by
    tool, else the whole key. What was taken out, or None when it is not the draft's to take."""
    key = _KEY_OF_KIND.get(kind, kind)
    value = draft.spec.get(key)
    if value is None or key in ("name", "select"):
        return None
    keyed = value.get("max_ms") if key == "latency" and isinstance(value, dict) else value
    if isinstance(keyed, dict) and target in keyed:
        del keyed[target]
        if keyed:
            return f"{key} of {target}"
    elif isinstance(keyed, list) and key == "expected_tools" and target in keyed and len(keyed) > 1:
        keyed.remove(target)
        return f"{key}: {target}"
    del draft.spec[key]
    draft.evidence.pop(key, None)
    return key


def _verified(draft: Draft, runs: Sequence[Evidence]) -> Draft:
    """Judge the draft on its own runs; take out what a run fails, until every run passes."""
    while True:
        if set(draft.spec) <= {"name", "select"}:
            raise ValueError(
                "the chosen runs agree on nothing a spec could check (no tool every one of them ran "
                "cleanly); choose the good runs (--run, --where)"
            )
        spec = Spec.model_validate(draft.spec)
        unmet: set[tuple[str, str]] = set()
        for evidence in runs:
            for verdict in score_evidence([spec], evidence):
                if verdict.label == "pass":
                    continue
                failed = {(c.kind, c.target) for c in (*verdict.gates, *verdict.checks) if not c.satisfied}
                if not failed:  # an error verdict: nothing narrower to take out
                    raise ValueError(
                        f"the draft could not be judged on run {verdict.run_id}: {verdict.reason}"
                    )
                unmet |= failed
        if not unmet:
            return draft
        taken = [t for kind, target in sorted(unmet) if (t := _take_out(draft, kind, target)) is not None]
        if not taken:
            raise ValueError(f"a drafted run fails checks the draft cannot drop: {sorted(unmet)}")
        draft.removed.extend(f"{what} (a run it was drafted from failed it)" for what in taken)

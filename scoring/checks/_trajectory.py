"""`trajectory` (the sequence of clean executions against a reference) and `before` (ordering pairs).

Unordered, subset and superset pair expected calls with executions by maximum bipartite matching:
agentevals' set modes and BFCL's parallel checker take the first execution that fits, which gives false
negatives when acceptable values overlap (reference: [f(x∈{1,2}), f(x∈{1})] against [f(1), f(2)]).

Subsequence finds the reference's calls in its order among the clean calls, others allowed between
(DeepEval's ordering, without its partial credit); a parallel round's calls are a set there too.

Strict compares the sequence, but not inside a parallel round: the calls one chat span requested
together (the round of the request each execution answered, `tool_requests.round`) start in an order
nobody chose, so they take their places side by side, at the start of the round's first call, and are
compared with their positions' items as a set, as agentevals' strict mode compares the calls of one
assistant message. A call that answered no captured request keeps its own place by start time.
"""

from __future__ import annotations

from typing import Any

from scoring.checks._bipartite import matching_size, max_matching
from scoring.checks._results import result_failures
from scoring.checks._rules import compact, rules_failures
from scoring.checks.registry import Scoped, register_check
from scoring.evidence.runs import Execution
from scoring.spec.check_models import Normalize, TrajectoryItem
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult


def item_matches(item: TrajectoryItem, call: Execution, normalize: Normalize | None = None) -> bool:
    """Same tool, the call meets the item's argument rules (extra keys are fine unless the item's mode
    is exact; `normalize` is the spec's) and its result meets the item's result rule."""
    return (
        call.tool_name == item.tool
        and not rules_failures(
            item.values, item.mode or "subset", call.arguments, call.arguments_valid, normalize
        )
        and (item.result is None or not result_failures(item.result, call))
    )


def describe(item: TrajectoryItem) -> str:
    text = item.tool
    if item.values:
        text += " " + compact(
            {k: r.model_dump(mode="json", exclude_none=True) for k, r in item.values.items()}
        )
    if item.result is not None:
        text += " returning " + compact(item.result.model_dump(mode="json", exclude_none=True))
    return text


def _in_order(executions: tuple[Execution, ...]) -> list[Execution]:
    return sorted((e for e in executions if e.clean), key=lambda e: e.start_ns)  # stable on ties


RoundKey = tuple[int, str]  # (round, chat span): a run's traces each number their rounds from 1


def rounds_of(evidence: Scoped) -> dict[tuple[str, int], RoundKey]:
    """The round of each execution that answered a captured request, by the execution's `key`."""
    return {
        key: (r.round, r.span_id)
        for r in evidence.requests
        if (key := r.execution_key) is not None and r.round is not None
    }


def in_rounds(calls: list[Execution], round_of: dict[tuple[str, int], RoundKey]) -> list[list[Execution]]:
    """Calls (in start order) as the sequence strict mode compares: each round's calls side by side at
    the place of its first call; a call of no known round is a place of its own."""
    places: list[list[Execution]] = []
    open_rounds: dict[RoundKey, list[Execution]] = {}
    for call in calls:
        key = round_of.get(call.key)
        if key is None:
            places.append([call])
        elif key in open_rounds:
            open_rounds[key].append(call)
        else:
            open_rounds[key] = [call]
            places.append(open_rounds[key])
    return places


def _positions(first: int, count: int) -> str:
    return f"position {first}" if count == 1 else f"positions {first}-{first + count - 1}"


def _strict(
    items: list[TrajectoryItem], places: list[list[Execution]], normalize: Normalize | None
) -> str | None:
    position = 0
    for group in places:
        wanted = items[position : position + len(group)]
        if len(group) == 1 and wanted:
            item, call = wanted[0], group[0]
            if not item_matches(item, call, normalize):
                return (
                    f"position {position + 1}: expected {describe(item)}, got {call.tool_name} "
                    f"(call {call.span_id})"
                )
        elif wanted:
            # Every item of these positions must pair with a distinct call of the round (when the
            # reference ends inside the round, the calls left over are counted below).
            edges = [
                [j for j, call in enumerate(group) if item_matches(item, call, normalize)] for item in wanted
            ]
            if matching_size(max_matching(len(wanted), len(group), edges)) < len(wanted):
                expected = ", ".join(describe(item) for item in wanted)
                got = ", ".join(f"{c.tool_name} (call {c.span_id})" for c in group)
                return (
                    f"{_positions(position + 1, len(wanted))} (one parallel round, compared as a set): "
                    f"expected {expected}, got {got}"
                )
        position += len(group)
    if len(items) != position:
        return f"{position} clean call(s) for {len(items)} expected"
    return None


def _longest_block(items: list[TrajectoryItem], group: list[Execution], normalize: Normalize | None) -> int:
    """How many of `items`, from the first, the calls of one place can meet, each a distinct call (a
    parallel round's calls are compared as a set)."""
    for size in range(min(len(items), len(group)), 0, -1):
        block = items[:size]
        edges = [[j for j, call in enumerate(group) if item_matches(item, call, normalize)] for item in block]
        if matching_size(max_matching(size, len(group), edges)) == size:
            return size
    return 0


def _subsequence(
    items: list[TrajectoryItem], places: list[list[Execution]], normalize: Normalize | None
) -> tuple[str | None, dict[str, Any]]:
    """The items in order, each met by a later place than the one before (other calls between are
    fine). Each place takes the longest block of the items left that it can meet: a shorter rest of
    the reference never fits the later places worse, so this finds an embedding whenever one exists."""
    position, met_by = 0, list[str]()
    for group in places:
        if position == len(items):
            break
        size = _longest_block(items[position:], group, normalize)
        met_by.extend(group[0].span_id for _ in range(size))
        position += size
    missing = [describe(item) for item in items[position:]]
    observed: dict[str, Any] = {"matched": position, "unmatched_expected": missing}
    if not missing:
        return None, observed
    after = f" after call {met_by[-1]}" if met_by else ""
    problem = (
        f"position {position + 1}: expected {describe(items[position])}, no matching clean call{after} "
        f"({position} of {len(items)} expected call(s) met in order)"
    )
    return problem, observed


def _matched(
    mode: str, items: list[TrajectoryItem], calls: list[Execution], normalize: Normalize | None
) -> tuple[str | None, dict[str, Any]]:
    edges = [[j for j, call in enumerate(calls) if item_matches(item, call, normalize)] for item in items]
    pairing = max_matching(len(items), len(calls), edges)
    used = {j for j in pairing if j >= 0}
    missing = [describe(items[i]) for i, j in enumerate(pairing) if j < 0]
    extra = [f"{c.tool_name} (call {c.span_id})" for j, c in enumerate(calls) if j not in used]
    problems = []
    if missing and mode in ("unordered", "superset"):
        problems.append(f"expected call(s) with no matching clean execution: {', '.join(missing)}")
    if extra and mode in ("unordered", "subset"):
        problems.append(f"clean call(s) not in the reference: {', '.join(extra)}")
    observed = {"unmatched_expected": missing, "unmatched_calls": extra, "matched": matching_size(pairing)}
    return ("; ".join(problems) or None), observed


_MEANING = {
    "strict": "the same sequence",
    "unordered": "the same calls in any order",
    "subset": "only calls from the reference",
    "superset": "every reference call",
    "subsequence": "every reference call, in its order",
}


@register_check("trajectory")
def trajectory(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    if spec.trajectory is None:
        return []
    mode, items = spec.trajectory.mode, list(spec.trajectory.tools)
    calls = _in_order(evidence.executions)
    observed: dict[str, Any] = {"calls": [c.tool_name for c in calls]}
    if mode == "strict":
        places = in_rounds(calls, rounds_of(evidence))
        calls = [call for group in places for call in group]
        observed["calls"] = [c.tool_name for c in calls]
        parallel_rounds = [[c.tool_name for c in group] for group in places if len(group) > 1]
        if parallel_rounds:  # what was compared as a set; absent when every place held one call
            observed["parallel_rounds"] = parallel_rounds
        problem = _strict(items, places, spec.normalize)
    elif mode == "subsequence":
        places = in_rounds(calls, rounds_of(evidence))
        problem, matching = _subsequence(items, places, spec.normalize)
        observed.update(matching)
    else:
        problem, matching = _matched(mode, items, calls, spec.normalize)
        observed.update(matching)
    detail = f"trajectory ({mode}): " + (problem or f"{len(calls)} clean call(s) are {_MEANING[mode]}")
    expected = spec.trajectory.model_dump(mode="json", exclude_none=True)
    return [CheckResult("trajectory", mode, problem is None, detail, expected=expected, observed=observed)]


def _first_before(earlier: list[Execution], later: list[Execution]) -> tuple[Execution, Execution] | None:
    """Some execution of `earlier` that ends no later than some (other) execution of `later` starts."""
    if not earlier or not later:
        return None
    if any(a is b for a in earlier for b in later):  # the same tool on both sides: distinct calls
        return next(((a, b) for a in earlier for b in later if a is not b and a.end_ns <= b.start_ns), None)
    first = min(earlier, key=lambda e: e.end_ns)
    last = max(later, key=lambda e: e.start_ns)
    return (first, last) if first.end_ns <= last.start_ns else None


@register_check("before")
def before(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """One check per pair [A, B]: some clean A ends before (or as) some clean B starts."""
    results = []
    for a, b in spec.before or []:
        first, then = evidence.clean_of(a), evidence.clean_of(b)
        pair = _first_before(first, then)
        if pair is not None:
            detail = f"{a} (call {pair[0].span_id}) ended before {b} (call {pair[1].span_id}) started"
        elif not first or not then:
            absent = [name for name, calls in ((a, first), (b, then)) if not calls]
            detail = f"{a} before {b}: no clean execution of {' or '.join(dict.fromkeys(absent))}"
        else:
            detail = f"no clean {a} ended before a clean {b} started"
        observed = {a: len(first), b: len(then)} if a != b else {a: len(first)}
        results.append(CheckResult("before", f"{a} < {b}", pair is not None, detail, [a, b], observed))
    return results

"""Argument rules: BFCL-style acceptable values, with its defects fixed (docs/checks.md, "Argument rules").

The type policy is explicit rather than Python's `==` (where `True == 1`): an integer is accepted where
a number is expected and numbers compare by value (`1 == 1.0`); a boolean is never a number; a string
is never a number. String normalisation is opt-in and names its character classes (BFCL's silently
strips `_`, so `a_b` equals `ab`; here punctuation separates words instead). `normalize: bfcl` swaps
all of this for BFCL's own rules (scoring/checks/_bfcl.py). Regexes run on RE2, in time linear in the
value (scoring/spec/regex.py): a hostile argument cannot stall the scorer.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import Any

from scoring.checks import _bfcl
from scoring.checks.registry import Scoped, register_check
from scoring.evidence.runs import Execution
from scoring.spec.check_models import ArgumentRules, Normalize, Rule
from scoring.spec.regex import PatternError, fullmatch
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult


def fold(text: str) -> str:
    """Normalised text: Unicode NFKC, case-folded, every punctuation character (Unicode category P*)
    and whitespace run turned into one space, trimmed. `"April 1, 2024"` → `"april 1 2024"`."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    spaced = "".join(" " if c.isspace() or unicodedata.category(c).startswith("P") else c for c in folded)
    return " ".join(spaced.split())


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def values_equal(
    expected: Any, actual: Any, *, normalize: bool = False, tolerance: float | None = None
) -> bool:
    """JSON equality under the type policy; `normalize` folds strings and `tolerance` widens number
    equality, at any depth of lists and objects."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected is actual
    if _number(expected) and _number(actual):
        return abs(expected - actual) <= tolerance if tolerance is not None else bool(expected == actual)
    if isinstance(expected, str) and isinstance(actual, str):
        return fold(expected) == fold(actual) if normalize else expected == actual
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            values_equal(e, a, normalize=normalize, tolerance=tolerance)
            for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            values_equal(v, actual[k], normalize=normalize, tolerance=tolerance) for k, v in expected.items()
        )
    return expected is None and actual is None


def lookup(arguments: Any, path: str) -> tuple[bool, Any]:
    """(present, value) of a dotted path into nested objects: `filter.region`."""
    current = arguments
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return False, None
        current = current[part]
    return True, current


def compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)


def rule_failure(
    key: str, rule: Rule, present: bool, value: Any, normalize: Normalize | None = None
) -> str | None:
    """Why one argument breaks its rule, or None when it meets it. `normalize` is the spec's own
    setting, used by a rule that sets none."""
    if rule.ignore:
        return None
    mode = rule.normalize if rule.normalize is not None else normalize
    bfcl = mode == "bfcl" and rule.any_of is not None
    if not present:
        if rule.optional or (bfcl and rule.optional is None and _bfcl.omittable(rule.any_of or [])):
            return None
        return f"{key} is missing"
    if bfcl:
        why = _bfcl.failure(value, rule.any_of or [], rule.type)
        if why is not None:
            shown = f"{why}: " if why != "value" else ""
            return f"{key}: {shown}{compact(value)} is not any of {compact(rule.any_of)} (bfcl)"
    elif rule.any_of is not None:
        folded, tolerance = mode is True, rule.tolerance
        if not any(values_equal(v, value, normalize=folded, tolerance=tolerance) for v in rule.any_of):
            how = [h for h, on in (("normalized", folded), (f"tolerance {tolerance}", tolerance)) if on]
            suffix = f" ({', '.join(how)})" if how else ""
            return f"{key}: {compact(value)} is not any of {compact(rule.any_of)}{suffix}"
    if rule.regex is not None:
        if not isinstance(value, str):
            return f"{key}: {compact(value)} is not a string, so cannot match regex {rule.regex!r}"
        try:
            matched = fullmatch(rule.regex, value)
        except PatternError as exc:  # refused at load time; only a Rule built without validation gets here
            return f"{key}: {exc}"
        if not matched:
            return f"{key}: {compact(value)} does not match regex {rule.regex!r} (whole string)"
    if rule.range is not None:
        low, high = rule.range
        if not _number(value):
            return f"{key}: {compact(value)} is not a number, so cannot be in range {compact([low, high])}"
        if (low is not None and value < low) or (high is not None and value > high):
            return f"{key}: {compact(value)} is outside range {compact([low, high])}"
    return None


def _extra_keys(arguments: dict[str, Any], paths: list[list[str]]) -> list[str]:
    """Keys of the call beyond the declared paths, at every object level a declared path reaches."""
    trie: dict[str, Any] = {}
    for parts in paths:
        node = trie
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if child is None:  # a shorter path already declared this whole value
                break
            node = child
        else:
            node[parts[-1]] = None  # None: the whole value is declared
    extra: list[str] = []

    def walk(value: dict[str, Any], node: dict[str, Any], prefix: str) -> None:
        for key, item in value.items():
            if key not in node:
                extra.append(prefix + key)
            elif node[key] is not None and isinstance(item, dict):
                walk(item, node[key], f"{prefix}{key}.")

    walk(arguments, trie, "")
    return extra


def rules_failures(
    values: Mapping[str, Rule],
    mode: str,
    arguments: Any,
    arguments_valid: bool = True,
    normalize: Normalize | None = None,
) -> list[str]:
    """Every rule one call breaks (empty: the call meets them all); `normalize` as in `rule_failure`."""
    if not values and mode == "subset":
        return []  # `values: {}` in subset mode: any clean call, captured arguments or not
    if not arguments_valid:
        return ["arguments are not valid JSON"]
    if arguments is None:
        return ["arguments were not captured (content capture off?)"]
    if not isinstance(arguments, dict):
        return [f"arguments are not a JSON object: {compact(arguments)[:80]}"]
    failures = [
        failure
        for key, rule in values.items()
        if (failure := rule_failure(key, rule, *lookup(arguments, key), normalize)) is not None
    ]
    if mode == "exact":
        extra = _extra_keys(arguments, [key.split(".") for key in values])
        failures.extend(f"{key} is not allowed (mode: exact)" for key in extra)
    return failures


def key_score(
    values: Mapping[str, Rule],
    mode: str,
    arguments: Any,
    arguments_valid: bool = True,
    normalize: Normalize | None = None,
) -> float:
    """The share of the keys one call meets: met rules / rules (`subset`, Ragas's denominator), or met
    rules / (rules + the call's keys beyond them) (`exact`, DeepEval's union of keys)."""
    if not values and mode == "subset":
        return 1.0
    if not arguments_valid or not isinstance(arguments, dict):
        return 0.0
    met = sum(
        1
        for key, rule in values.items()
        if rule_failure(key, rule, *lookup(arguments, key), normalize) is None
    )
    extra = len(_extra_keys(arguments, [key.split(".") for key in values])) if mode == "exact" else 0
    return met / (len(values) + extra) if values or extra else 1.0


def _closest(calls: list[Execution], failures: list[list[str]]) -> str:
    best = min(range(len(calls)), key=lambda i: len(failures[i]))
    return f"closest: call {calls[best].span_id}: {'; '.join(failures[best])}"


@register_check("argument_rules")
def argument_rules(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """One check per tool: some clean execution meets every rule."""
    results = []
    for tool, rules in (spec.argument_rules or {}).items():
        calls = evidence.clean_of(tool)
        failures = [
            rules_failures(rules.values, rules.mode, c.arguments, c.arguments_valid, spec.normalize)
            for c in calls
        ]
        winner = next((c for c, f in zip(calls, failures, strict=True) if not f), None)
        expected = rules.model_dump(mode="json", exclude_none=True)
        if winner is not None:
            detail = f"clean {tool} call {winner.span_id} meets every argument rule"
        elif not calls:
            detail = f"no clean {tool} execution to meet the argument rules"
        else:
            detail = (
                f"no clean {tool} execution meets the argument rules ({len(calls)} clean call(s); "
                f"{_closest(calls, failures)})"
            )
        observed: Any = [{"span_id": c.span_id, "broken": f} for c, f in zip(calls, failures, strict=True)]
        if rules.score == "per_key":
            observed, detail = _per_key(rules, calls, observed, detail, spec.normalize)
        results.append(CheckResult("argument_rules", tool, winner is not None, detail, expected, observed))
    return results


def _per_key(
    rules: ArgumentRules,
    calls: list[Execution],
    observed: list[dict[str, Any]],
    detail: str,
    normalize: Normalize | None,
) -> tuple[dict[str, Any], str]:
    """`score: per_key`: each call's share of the keys, and the best one as the check's `score`."""
    scores = [key_score(rules.values, rules.mode, c.arguments, c.arguments_valid, normalize) for c in calls]
    for entry, score in zip(observed, scores, strict=True):
        entry["score"] = score
    best = max(scores, default=0.0)
    if best < 1:
        detail += f" (per-key score {best:.4g})"
    return {"score": best, "calls": observed}, detail

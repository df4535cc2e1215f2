"""Response checks on what tools returned (issue 21): `results` and its weaker `result_shape`.

`results: {TOOL: {value, values, schema}}`: some clean execution of TOOL returned a result that meets
every part given, with the rules of `argument_rules` (scoring/checks/_rules.py); `{}` asks only that
some clean execution's result was captured. A result is read as `executions.result` stores it: JSON
text is its value; any other text is a string, so `value` rules (regex, any_of) apply to it and
dotted `values` paths find nothing in it.

`shape` is BFCL's structural match of executable results: dict keys and list lengths must be those of
the example, leaves must be of the same JSON type, and no value is compared. It cannot tell a right
answer from a wrong one of the same form, so it is its own check kind (`result_shape`), never counted
as a `results` check.
"""

from __future__ import annotations

from typing import Any

from scoring.checks._bipartite import matching_size, max_matching
from scoring.checks._paths import dotted
from scoring.checks._rules import compact, rule_failure
from scoring.checks.registry import Scoped, register_check
from scoring.evidence.runs import Execution
from scoring.spec.check_models import ResultRule
from scoring.spec.jsonschema import violations
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult


def result_text(call: Execution) -> str | None:
    """The result's text as the tool returned it (None: not captured). Text that is not JSON is stored
    as a JSON string (and held as itself on the live path): either way that string is the text; JSON
    text is kept as written, so `5.0` stays `5.0`."""
    if call.result_text is None:
        return None
    captured, value = call.result
    return value if captured and isinstance(value, str) else call.result_text


def result_failures(rule: ResultRule, call: Execution) -> list[str]:
    """Every part of the rule one call's result breaks (empty: the result meets it)."""
    captured, value = call.result
    if not captured:
        return ["the result was not captured (content capture off?)"]
    failures = []
    if rule.text is not None and (failure := rule_failure("text", rule.text, True, result_text(call))):
        failures.append(failure)
    if rule.value is not None and (failure := rule_failure("result", rule.value, True, value)) is not None:
        failures.append(failure)
    if rule.values:
        if not isinstance(value, dict | list):
            kind = "text" if isinstance(value, str) else compact(value)[:40]
            failures.append(f"the result is {kind}, not a JSON object or array: its paths cannot be read")
        else:
            failures.extend(
                failure
                for path, path_rule in rule.values.items()
                if (failure := rule_failure(path, path_rule, *dotted(value, path))) is not None
            )
    if rule.schema_ is not None:
        failures.extend(
            f"{v.pointer or '/'} breaks {v.rule}: {v.message}" for v in violations(rule.schema_, value)
        )
    return failures


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def shape_failures(expected: Any, actual: Any, where: str = "") -> list[str]:
    """How a value's form differs from the example's: keys, lengths and leaf types, never values."""
    here = where or "/"
    if _json_type(expected) != _json_type(actual):
        return [f"{here} is {_json_type(actual)}, the example has {_json_type(expected)}"]
    if isinstance(expected, list):
        if len(expected) != len(actual):
            return [f"{here} has {len(actual)} item(s), the example {len(expected)}"]
        return [
            f
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for f in shape_failures(e, a, f"{where}/{i}")
        ]
    if isinstance(expected, dict):
        missing, extra = sorted(expected.keys() - actual.keys()), sorted(actual.keys() - expected.keys())
        if missing or extra:
            parts = [f"missing {', '.join(missing)}"] * bool(missing) + [f"extra {', '.join(extra)}"] * bool(
                extra
            )
            return [f"{here} keys differ: {'; '.join(parts)}"]
        return [f for k in expected for f in shape_failures(expected[k], actual[k], f"{where}/{k}")]
    return []


def _one_tool(
    kind: str, tool: str, calls: list[Execution], failures: list[list[str]], expected: Any
) -> CheckResult:
    winner = next((c for c, f in zip(calls, failures, strict=True) if not f), None)
    what = "the result rules" if kind == "results" else "the result shape (keys, lengths, types; not values)"
    if winner is not None:
        detail = f"clean {tool} call {winner.span_id} returned a result meeting {what}"
    elif not calls:
        detail = f"no clean {tool} execution whose result could meet {what}"
    else:
        best = min(range(len(calls)), key=lambda i: len(failures[i]))
        detail = (
            f"no clean {tool} execution returned a result meeting {what} ({len(calls)} clean call(s); "
            f"closest: call {calls[best].span_id}: {'; '.join(failures[best])})"
        )
    observed = [{"span_id": c.span_id, "broken": f} for c, f in zip(calls, failures, strict=True)]
    return CheckResult(kind, tool, winner is not None, detail, expected, observed)


def _several(tool: str, rules: list[ResultRule], calls: list[Execution]) -> CheckResult:
    """Each rule met by a distinct clean call, paired by a maximum matching (first fit would fail a
    run whose calls meet the rules only in another order)."""
    failures = [[result_failures(rule, call) for rule in rules] for call in calls]
    edges = [[j for j in range(len(calls)) if not failures[j][i]] for i in range(len(rules))]
    pairing = max_matching(len(rules), len(calls), edges)
    met = matching_size(pairing)
    paired = [calls[j].span_id if j >= 0 else None for j in pairing]
    if met == len(rules):
        detail = (
            f"each of the {len(rules)} result rules of {tool} is met by its own clean call "
            f"({', '.join(str(p) for p in paired)})"
        )
    else:
        unmet = [i for i, j in enumerate(pairing) if j < 0]
        first = unmet[0]
        if calls:
            best = min(range(len(calls)), key=lambda j: len(failures[j][first]))
            closest = (
                f"; rule {first + 1} closest: call {calls[best].span_id}: {'; '.join(failures[best][first])}"
            )
        else:
            closest = ""
        detail = (
            f"{met} of {len(rules)} result rules of {tool} met by distinct clean calls ({len(calls)} clean "
            f"call(s); rule(s) {', '.join(str(i + 1) for i in unmet)} unmet{closest})"
        )
    expected = [rule.model_dump(mode="json", exclude_none=True) for rule in rules]
    observed = {
        "paired": paired,
        "calls": [{"span_id": c.span_id, "broken": f} for c, f in zip(calls, failures, strict=True)],
    }
    return CheckResult("results", tool, met == len(rules), detail, expected, observed)


@register_check("results")
def results(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """One check per tool: some clean execution's result meets every rule given (a list of rules:
    each met by a clean execution of its own)."""
    checks = []
    for tool, rule in (spec.results or {}).items():
        calls = evidence.clean_in_scope(spec, "results", tool)
        if isinstance(rule, list):
            checks.append(_several(tool, rule, calls))
            continue
        failures = [result_failures(rule, call) for call in calls]
        expected = rule.model_dump(mode="json", exclude_none=True, exclude={"shape"})
        checks.append(_one_tool("results", tool, calls, failures, expected))
    return checks


@register_check("result_shape")
def result_shape(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    """One check per tool with a `shape`: some clean execution's result has the example's form."""
    checks = []
    for tool, rule in (spec.results or {}).items():
        if isinstance(rule, list) or "shape" not in rule.model_fields_set:
            continue
        calls = evidence.clean_in_scope(spec, "results", tool)
        failures = []
        for call in calls:
            captured, value = call.result
            failures.append(
                shape_failures(rule.shape, value) if captured else ["the result was not captured"]
            )
        checks.append(_one_tool("result_shape", tool, calls, failures, {"shape": rule.shape}))
    return checks

"""Spec keys of the check catalogue (issue 6): each accepted with its documented syntax, each mistake
refused with one message naming the file, the spec, the key and the fix; the fingerprint rules hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scoring import Spec, SpecError, load_specs
from scoring.spec.specs import CATALOGUE_KEYS

EVERY_KEY = """
name: everything
expected_tools: [lookup]
schema:
  order: {type: object, required: [sku], properties: {sku: {type: string}}}
argument_rules:
  quote:
    mode: exact
    values:
      region: {any_of: [north, south], normalize: true}
      filter.since: {optional: true, range: [0, 30]}
      note: {ignore: true}
      code: {regex: "[A-Z]+"}
      weight: {any_of: [2.5], tolerance: 0.1}
calls:
  lookup: {min: 1, max: 2}
  quote: {exactly: 1}
forbidden_tools: [delete_all]
trajectory: {mode: superset, tools: [lookup, {tool: quote, values: {region: {any_of: [north]}}}]}
before: [[lookup, quote]]
parallel: {tools: [lookup, fetch], max_rounds: 2}
expect_tool_call: true
require_executions_for_requests: true
latency: {max_ms: {"*": 2000}, p95_ms: {lookup: 500}, p99_ms: {"*": 3000}, window: 1h}
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def rejection(tmp_path: Path, text: str) -> str:
    path = write(tmp_path / "s.yaml", text)
    with pytest.raises(SpecError) as caught:
        load_specs([path])
    message = str(caught.value)
    assert message.startswith(f"{path}: spec ")
    return message.removeprefix(f"{path}: ")


def spec(**fields: Any) -> Spec:
    return Spec.model_validate({"name": "s", **fields})


def test_every_catalogue_key_loads(tmp_path: Path) -> None:
    [loaded] = load_specs([write(tmp_path / "s.yaml", EVERY_KEY)])
    assert isinstance(loaded.schema_, dict) and set(loaded.schema_) == {"order"}
    assert loaded.argument_rules is not None and loaded.argument_rules["quote"].mode == "exact"
    assert loaded.calls is not None and loaded.calls["quote"].bounds == (1, 1)
    assert loaded.forbidden_tools == ["delete_all"]
    assert loaded.trajectory is not None and [i.tool for i in loaded.trajectory.tools] == ["lookup", "quote"]
    assert loaded.before == [("lookup", "quote")]
    assert loaded.parallel is not None and loaded.parallel.max_rounds == 2
    assert (loaded.expect_tool_call, loaded.require_executions_for_requests) == (True, True)
    assert loaded.latency is not None and loaded.latency.percentiles == {
        "p95_ms": {"lookup": 500},
        "p99_ms": {"*": 3000},
    }
    assert set(loaded.canonical()) >= {"schema", *CATALOGUE_KEYS} - {"expect_no_tool_calls"}


@pytest.mark.parametrize(
    "fields",
    [
        {"schema": "from_trace"},
        {"schema": {"t": {"type": "object"}}},
        {"argument_rules": {"t": {"values": {"q": {"any_of": [1]}}}}},
        {"calls": {"t": {"max": 0}}},
        {"forbidden_tools": ["t"]},
        {"trajectory": {"mode": "strict", "tools": []}},
        {"before": [["a", "b"]]},
        {"parallel": {"tools": ["a", "b"]}},
        {"expect_no_tool_calls": True},
        {"expect_tool_call": True},
        {"require_executions_for_requests": True},
        {"latency": {"p50_ms": {"t": 10}}},
    ],
    ids=lambda f: next(iter(f)),
)
def test_each_catalogue_key_alone_is_a_valid_spec(fields: dict[str, Any]) -> None:
    assert spec(**fields).name == "s"


def test_defaults_of_the_catalogue() -> None:
    rules = spec(argument_rules={"t": {"values": {}}}).argument_rules
    assert rules is not None and rules["t"].mode == "subset"
    parallel = spec(parallel={"tools": ["a"]}).parallel
    assert parallel is not None and parallel.max_rounds == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "schema: {order: {type: objekt}}",
            "schema: order: not a valid JSON Schema (Draft 2020-12) at /type:",
        ),
        ("schema: frm_trace", "schema: must be {TOOL: <JSON Schema object>} or from_trace, not 'frm_trace'"),
        ("schema: {order: [1]}", "the schema of 'order' is not an object"),
        (
            "argument_rules: {q: {values: {k: {any_off: [1]}}}}",
            "argument_rules.q.values.k.any_off: unknown key; did you mean 'any_of'?",
        ),
        (
            "argument_rules: {q: {mod: exact, values: {}}}",
            "argument_rules.q.mod: unknown key; did you mean 'mode'?",
        ),
        (
            "argument_rules: {q: {mode: all, values: {}}}",
            "argument_rules.q.mode: Input should be 'subset' or 'exact'",
        ),
        ("argument_rules: {q: {values: {k: north}}}", "a rule is a mapping such as {any_of: ['north']}"),
        ("argument_rules: {q: {values: {k: {any_of: []}}}}", "any_of is empty"),
        (
            "argument_rules: {q: {values: {k: {normalize: true}}}}",
            "normalize changes how any_of values compare: give any_of too",
        ),
        ("argument_rules: {q: {values: {k: {tolerance: 1}}}}", "tolerance changes how any_of values compare"),
        ("argument_rules: {q: {values: {k: {any_of: [1], tolerance: -1}}}}", "tolerance must be 0 or more"),
        ("argument_rules: {q: {values: {k: {ignore: true, any_of: [1]}}}}", "ignore: true accepts anything"),
        ("argument_rules: {q: {values: {k: {range: [5, 1]}}}}", "range [5, 1] is empty"),
        ("argument_rules: {q: {values: {k: {range: [null, null]}}}}", "range [null, null] bounds nothing"),
        ("argument_rules: {q: {values: {k: {range: ['a', 1]}}}}", "argument_rules.q.values.k.range.0"),
        ("argument_rules: {q: {values: {k: {regex: '('}}}}", "regex '(' cannot be used: missing ) at '('"),
        # Regexes run on RE2 (linear time): what only a backtracking engine can do is refused, with the fix.
        (
            "argument_rules: {q: {values: {k: {regex: '(?=.*[0-9])[a-z0-9]+'}}}}",
            "argument_rules.q.values.k.regex: regex '(?=.*[0-9])[a-z0-9]+' cannot be used: lookahead (?=…) "
            "is not supported",
        ),
        ("argument_rules: {q: {values: {k: {regex: '(a)b\\1'}}}}", "backreferences (\\1, \\2, …) are not"),
        ("argument_rules: {q: {values: {k: {regex: 'a\\Z'}}}}", r"\Z is not supported: write \z"),
        ("argument_rules: {q: {values: {k: {regex: 'a++'}}}}", "possessive quantifiers"),
        ("argument_rules: {q: {values: {k: {regex: '(a{100}){100}'}}}}", "invalid repetition size"),
        (
            f"argument_rules: {{q: {{values: {{k: {{regex: '{'a' * 1001}'}}}}}}}}",
            f"regex '{'a' * 60}…' cannot be used: it has 1001 characters (at most 1000): shorten it",
        ),
        (
            "trajectory: {mode: strict, tools: [{tool: a, values: {k: {regex: '(?<!x)y'}}}]}",
            "trajectory.tools.0.values.k.regex: regex '(?<!x)y' cannot be used: negative lookbehind",
        ),
        (
            "schema: {q: {properties: {k: {pattern: '(?!x)'}}}}",
            "schema: q: a regex RE2 cannot run at /properties/k/pattern ('(?!x)'): negative lookahead",
        ),
        (
            "schema: {q: {patternProperties: {'(a)\\1': {}}}}",
            "a regex RE2 cannot run at /patternProperties/(a)\\1",
        ),
        (
            "schema: {q: {patternProperties: {'^x': {}}, unevaluatedProperties: false}}",
            "unevaluatedProperties beside patternProperties is not supported",
        ),
        ("argument_rules: {q: {values: {'a..b': {}}}}", "argument key 'a..b' is not a key or dotted path"),
        ("argument_rules: {q: {values: {d: {any_of: [2024-01-01]}}}}", "in YAML, quote dates"),
        ("argument_rules: {q: {values: {k: {optional: 'yes'}}}}", "argument_rules.q.values.k.optional"),
        ("calls: {q: {min: 3, max: 1}}", "calls.q: min 3 is greater than max 1"),
        ("calls: {q: {exactly: 1, min: 1}}", "exactly cannot be combined with min or max"),
        ("calls: {q: {}}", "give min, max (or both) or exactly"),
        ("calls: {q: {min: -1}}", "calls.q.min"),
        ("calls: {q: {min: 1.5}}", "calls.q.min"),
        (
            "forbidden_tools: drop",
            "forbidden_tools: must be a list of tool names, not the bare string 'drop' (write [drop])",
        ),
        ("forbidden_tools: []", "forbidden_tools is empty"),
        (
            "trajectory: {mode: sometimes, tools: [a]}",
            "trajectory.mode: Input should be 'strict', 'unordered', 'subset', 'superset' or 'subsequence'",
        ),
        ("trajectory: {tools: [a]}", "trajectory.mode: Field required"),
        (
            "trajectory: {mode: strict, tools: [{tool: a, value: {}}]}",
            "trajectory.tools.0.value: unknown key; did you mean 'values'?",
        ),
        ("trajectory: {mode: superset, tools: []}", "superset of an empty trajectory is always satisfied"),
        ("trajectory: {mode: strict, tools: ['']}", "tool names must not be empty"),
        ("before: [a, b]", 'before: before is a list of [A, B] pairs: write [["a", "b"]]'),
        ("before: [[a, b, c]]", "before.0"),
        ("parallel: {tools: a}", "parallel.tools: must be a list of tool names"),
        ("parallel: {tools: [a], max_rounds: 0}", "parallel.max_rounds"),
        (
            "expect_no_tool_calls: false",
            "expect_no_tool_calls: the only value is true (got false): to turn it off, remove the key",
        ),
        ("expect_tool_call: 'yes'", "expect_tool_call: the only value is true"),
        ("expect_no_tool_calls: true\nexpect_tool_call: true", "contradict each other: keep one"),
        (
            "expect_no_tool_calls: true\nexpected_tools: [a]",
            "expect_no_tool_calls contradicts expected_tools",
        ),
        ("forbidden_tools: [a]\ncalls: {a: {min: 1}}", "a both forbidden and expected"),
        (
            "latency: {p95: {a: 1}}",
            "latency.p95: unknown key; did you mean 'p95_ms'? "
            "known keys are max_ms, p50_ms, p95_ms, p99_ms, window",
        ),
        ("latency: {p95_ms: {a: 0}}", "latency.p95_ms: p95_ms for 'a' must be greater than 0"),
        ("latency: {p95_ms: {}}", "p95_ms is empty"),
        ("latency: {window: 1h, max_ms: {a: 1}}", "window groups runs for percentile bounds"),
        ("latency: {window: 90, p50_ms: {a: 1}}", "latency.window"),
        (
            "latency: {window: 1hour, p50_ms: {a: 1}}",
            "window '1hour' is not a duration such as 30s, 15m, 1h or 1d",
        ),
        ("latency: {}", "give max_ms (per run) or p50_ms, p95_ms, p99_ms (per task over its runs)"),
        ("shema: from_trace", "shema: unknown key; did you mean 'schema'?"),
    ],
)
def test_mistakes_are_refused_naming_key_and_fix(tmp_path: Path, text: str, expected: str) -> None:
    message = rejection(tmp_path, f"name: oops\n{text}\n")
    assert message.startswith("spec 'oops': ")
    assert expected in message


@pytest.mark.parametrize("key", CATALOGUE_KEYS)
def test_reliability_eval_refuses_the_catalogue(key: str) -> None:
    values: dict[str, Any] = {
        "schema": "from_trace",
        "argument_rules": {"a": {"values": {}}},
        "calls": {"a": {"min": 1}},
        "forbidden_tools": ["z"],
        "trajectory": {"mode": "strict", "tools": ["a"]},
        "before": [["a", "b"]],
        "parallel": {"tools": ["a"]},
        "expect_no_tool_calls": True,
        "expect_tool_call": True,
        "require_executions_for_requests": True,
    }
    with pytest.raises(ValueError, match=f"{key} is not checked by profile reliability_eval"):
        spec(profile="reliability_eval", expected_tools=["a"], **{key: values[key]})


def test_schema_is_the_key_everywhere_outside_python() -> None:
    s = spec(schema={"t": {"type": "object"}})
    assert s.model_dump(exclude_none=True)["schema"] == {"t": {"type": "object"}}
    assert "schema_" not in s.canonical()
    with pytest.raises(ValueError, match="schema_"):
        Spec.model_validate({"name": "s", "schema_": "from_trace"})  # the Python name is not a spec key
    assert Spec.model_validate(s.model_dump(exclude_none=True)) == s  # what the CLI sends a server


BASE: dict[str, Any] = {"argument_rules": {"a": {"values": {"x": {"any_of": [1]}}}}}


@pytest.mark.parametrize(
    "change",
    [
        {"argument_rules": {"a": {"values": {"x": {"any_of": [2]}}}}},
        {"argument_rules": {"a": {"values": {"x": {"any_of": [1], "optional": True}}}}},
        {"argument_rules": {"a": {"mode": "exact", "values": {"x": {"any_of": [1]}}}}},
        {"schema": "from_trace"},
        {"calls": {"a": {"min": 1}}},
        {"forbidden_tools": ["z"]},
        {"trajectory": {"mode": "strict", "tools": ["a"]}},
        {"before": [["a", "b"]]},
        {"parallel": {"tools": ["a"]}},
        {"expect_tool_call": True},
        {"require_executions_for_requests": True},
        {"latency": {"p95_ms": {"a": 5}}},
        {"latency": {"p95_ms": {"a": 5}, "window": "1h"}},
    ],
)
def test_any_catalogue_change_changes_the_fingerprint(change: dict[str, Any]) -> None:
    assert spec(**{**BASE, **change}).fingerprint != spec(**BASE).fingerprint


def test_fingerprint_ignores_key_order_and_spelled_out_defaults() -> None:
    one = spec(argument_rules={"a": {"values": {"x": {"any_of": [1]}, "y": {"optional": True}}}})
    two = spec(
        argument_rules={"a": {"mode": "subset", "values": {"y": {"optional": True}, "x": {"any_of": [1]}}}}
    )
    assert one.fingerprint == two.fingerprint
    assert spec(trajectory={"mode": "strict", "tools": ["a"]}).fingerprint == (
        spec(trajectory={"mode": "strict", "tools": [{"tool": "a"}]}).fingerprint
    )

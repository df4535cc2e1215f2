"""The spec keys of issue 31 refuse mistakes with one message naming the file, the spec, the key and
the fix, as every other spec key does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scoring.spec.test_spec_catalogue import rejection


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("expected_tools: [a]\npass_threshold: 0", "pass_threshold is a share of the checks, more than 0"),
        ("expected_tools: [a]\npass_threshold: 1.5", "at most 1 (0.5 passes half), got 1.5"),
        ("expected_tools: [a]\npass_threshold: '0.5'", "pass_threshold"),
        ("expected_tools: [a]\npass_threshold: true", "pass_threshold"),
        (
            "profile: reliability_eval\nexpected_tools: [a]\npass_threshold: 0.5",
            "pass_threshold has no place in profile reliability_eval",
        ),
        (
            "turns: [{expected_tools: [a]}]\npass_threshold: 0.5",
            "pass_threshold at the top of a spec with turns",
        ),
        (
            "trajectory: {mode: subsequence, tools: []}",
            "subsequence of an empty trajectory is always satisfied",
        ),
        (
            "argument_rules: {q: {score: keys, values: {}}}",
            "argument_rules.q.score: Input should be 'per_key'",
        ),
        (
            "argument_rules: {q: {scor: per_key, values: {}}}",
            "argument_rules.q.scor: unknown key; did you mean 'score'?",
        ),
        (
            "trajectory: {mode: superset, tools: [{tool: a, result: {shape: {x: 1}}}]}",
            "result.shape is the check result_shape of `results`, not a rule a call can meet",
        ),
        (
            "trajectory: {mode: superset, tools: [{tool: a, result: {valeu: {any_of: [1]}}}]}",
            "trajectory.tools.0.result.valeu: unknown key; did you mean 'value'?",
        ),
        ("trajectory: {mode: superset, tools: [{tool: a, results: {}}]}", "did you mean 'result'?"),
        ("results: {a: []}", "results.a is an empty list: give one rule per call, or a single rule"),
        ("results: {a: [{shape: {x: 1}}]}", "results.a: shape is checked on one rule per tool"),
        (
            "results: {a: [{valeu: {}}]}",
            "results.a.0.valeu: unknown key; did you mean 'value'? known keys are value,",
        ),
        ("results: {a: 5}", "results.a: Input should be a valid dictionary"),
        (
            "results: {a: {text: '5'}}",
            "results.a.text: a rule is a mapping such as {any_of: ['5']}",
        ),
        (
            "unchecked: true",
            "unchecked marks a turn of a spec with turns that checks nothing: give checks here",
        ),
        (
            "turns: [{unchecked: true, calls: {a: {min: 1}}}]",
            "an unchecked turn checks nothing, but this one sets calls",
        ),
        ("turns: [{unchecked: false}]", "turns.0.unchecked: Input should be True"),
        ("turns: [unchekced]", "turns.0: Input should be a valid dictionary"),
        ("expected_tools: [a]\nconversation_scope: [results]", "conversation_scope lets a turn's checks see"),
        (
            "turns: [{expected_tools: [a], conversation_scope: [calls]}]",
            "conversation_scope names calls, which",
        ),
        (
            "turns: [{results: {a: {}}, conversation_scope: [state]}]",
            "turns.0.conversation_scope.0: Input should be",
        ),
        (
            "turns: [{results: {a: {}}, conversation_scope: []}]",
            "conversation_scope lists results, calls or both",
        ),
        ("expected_tools: [a]\nconversation: {expected_tools: [a]}", "conversation holds checks of a whole"),
        (
            "turns: [{expected_tools: [a]}]\nconversation: {name: x, expected_tools: [a]}",
            "conversation sets name",
        ),
        (
            "turns: [{expected_tools: [a]}]\nconversation: {schema: from_trace}",
            "schema: from_trace reads one run",
        ),
        ("turns: [{expected_tools: [a]}]\nconversation: {}", "conversation: this spec checks nothing"),
        (
            "turns: [{expected_tools: [a]}]\nconversation: {expected_tool: [a]}",
            "conversation.expected_tool: unknown key",
        ),
        (
            "expected_tools: [a]\nmulti_turn: bfcl",
            "multi_turn: bfcl sets how the turns of a spec with turns are judged: put it at the top of one",
        ),
        ("turns: [{expected_tools: [a]}]\nmulti_turn: true", "multi_turn: Input should be 'bfcl'"),
        (
            "turns: [{expected_tools: [a], multi_turn: bfcl}]",
            "turns.0: multi_turn: bfcl sets how the turns",
        ),
    ],
)
def test_mistakes_are_refused_naming_key_and_fix(tmp_path: Path, text: str, expected: str) -> None:
    message = rejection(tmp_path, f"name: oops\n{text}\n")
    assert message.startswith("spec 'oops': ")
    assert expected in message

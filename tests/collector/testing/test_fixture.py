"""The `tracescore` fixture's refusals say what is wrong in one line: nothing judged, a bad spec."""

from __future__ import annotations

import pytest

from tests.collector.testing._plugin import run

USER_FILE = """
from opentelemetry import trace

from tests.collector.testing._agent import SPEC_YAML, weather_agent


def test_a_spec_that_selects_no_run_fails(tracescore):
    weather_agent(trace.get_tracer("agent"), [("get_weather", {"city": "Paris"})], task="news")
    tracescore.assert_run(SPEC_YAML)


def test_a_bad_spec_fails_with_the_loaders_line(tracescore):
    weather_agent(trace.get_tracer("agent"), [("get_weather", {"city": "Paris"})])
    tracescore.assert_run({"name": "typo", "expected_tool": ["get_weather"]})


def test_a_run_still_going_is_not_judged(tracescore):
    with trace.get_tracer("agent").start_as_current_span("invoke_agent weather"):
        tracescore.assert_run(SPEC_YAML)


def test_spans_of_an_earlier_test_are_not_seen(tracescore):
    assert tracescore.spans == []
    assert tracescore.runs() == []
"""


def test_the_fixture_says_why_nothing_passed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_FILE)
    result = run(pytester, "-q")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*tracescore: no complete run matched the spec (1 complete run(s) captured from 2 span(s);*",
            "*tracescore: <spec data>: spec 'typo': expected_tool: unknown key; did you mean*",
            "*tracescore: 1 span(s) started in this test have not ended (invoke_agent weather): assert once*",
        ]
    )
    assert "Traceback" not in result.stdout.str()

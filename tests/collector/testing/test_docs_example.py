"""docs/testing.md's test file, run as a user would run it: the page cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.collector.testing._plugin import preload, run

DOC = Path(__file__).resolve().parents[3] / "docs" / "testing.md"


def doc_file(name: str) -> str:
    found = re.findall(rf"```python title={re.escape(name)}\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(found) == 1, f"docs/testing.md has no single code block titled {name}"
    return found[0]


def test_the_documented_test_file_passes_as_written(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_weather_agent=doc_file("test_weather_agent.py"))
    result = run(pytester, "-q")
    result.assert_outcomes(passed=4)


def test_the_documented_framework_files_pass_as_written(pytester: pytest.Pytester) -> None:
    preload(
        "httpx",
        "pydantic_ai.capabilities",
        "pydantic_ai.models.function",
        "agno.agent",
        "agno.models.openai",
        "openinference.instrumentation.agno",
    )
    pytester.makepyfile(
        test_shop_agent=doc_file("test_shop_agent.py"), test_agno_agent=doc_file("test_agno_agent.py")
    )
    result = run(pytester, "-q")
    result.assert_outcomes(passed=4)


def test_the_documented_spec_fails_a_wrong_run_naming_the_check(pytester: pytest.Pytester) -> None:
    # The user's file with its one passing assertion turned against it: the failure must say why.
    source = doc_file("test_weather_agent.py").replace(
        'weather_agent("Paris")\n    tracescore.assert_run',
        'weather_agent("Rome")\n    tracescore.assert_run',
        1,
    )
    pytester.makepyfile(test_weather_agent=source)
    result = run(pytester, "-q")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tracescore: 1 of 1 verdict(s) did not pass; spec 'weather-answers': no clean get_weather*",
            "*weather-answers*FAIL*no clean get_weather execution matches arguments*",
            "*check  arguments  get_weather*",
            '*1  get_weather  {"city": "Rome"}  ok*weather*',
        ]
    )

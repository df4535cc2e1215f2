"""What CI systems read from `score`, as pure functions: JUnit XML stays well-formed whatever a reason
holds (a tool's output quoted in it), and a GitHub Actions workflow command cannot be cut short or
forged by the text it carries."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from collector.cli._github import annotation, annotation_lines
from collector.cli._junit import junit_xml
from scoring.batch.score import Scored

NASTY = 'a <b> & "c"\n::error::forged\x00\x1b[31m 100% done, really: yes'


def test_junit_holds_any_reason_and_counts_each_outcome() -> None:
    verdicts = [
        Scored("r1", "t", "s", "pass", 1.0, None),
        Scored("r2", "t", "s", "fail", 0.5, NASTY),
        Scored("r3", None, "s", "error", None, "the scorer raised"),
    ]
    root = ET.fromstring(junit_xml(verdicts))
    (suite,) = root
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["r3"].get("classname") == "-/s"
    failure = cases["r2"].find("failure")
    assert failure is not None
    assert failure.get("message") == NASTY.replace("\x00", "\ufffd").replace("\x1b", "\ufffd")


def test_nothing_scored_is_an_error_case_or_skipped_when_allowed() -> None:
    (case,) = ET.fromstring(junit_xml([], empty="no runs in the window")).iter("testcase")
    assert case.find("error") is not None and case.get("name") == "nothing scored"
    allowed = ET.fromstring(junit_xml([], empty="no runs in the window", allowed=True))
    (suite,) = allowed
    assert suite.get("skipped") == "1" and suite.get("errors") == "0"


def test_an_annotation_is_one_line_that_its_text_cannot_end_early() -> None:
    line = annotation("tracescore: t/s failed, twice", NASTY)
    assert "\n" not in line and "\r" not in line
    assert line.startswith("::error title=tracescore%3A t/s failed%2C twice::a <b>")
    # The runner reads the properties up to the first "::" and the rest of the line as the message: with
    # the newline escaped, the message's own "::error::" is text on the same line, never a command.
    assert line.split("::", 2)[2] == NASTY.replace("%", "%25").replace("\n", "%0A")
    passing = Scored("r1", "t", "s", "pass", 1.0, None)
    assert annotation_lines([passing]) == []

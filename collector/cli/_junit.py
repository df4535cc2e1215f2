"""`score --format junit`: the verdicts as JUnit XML, which CI systems (GitHub Actions reporters, GitLab,
Jenkins, Azure Pipelines) show as tests.

One test case per run and spec: `classname` is `TASK/SPEC` (`-` for no task), `name` the run id; a
`fail` verdict is a `<failure>` whose message is the verdict's reason, an `error` verdict (the scorer
could not judge the run) an `<error>`. Element and attribute names are those of the common JUnit
schema (Jenkins' junit.xsd): testsuites > testsuite > testcase > failure | error | skipped, system-out.
When nothing was scored the suite holds one test case saying why: an `<error>`, or `<skipped>` under
`--allow-empty`, so the CI page tells the same story as the exit code.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TextIO

from scoring.report.text import VerdictView

# XML 1.0 cannot hold these characters at all, escaped or not: a reason quoting a tool's output might.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def _case(suite: ET.Element, verdict: VerdictView) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        classname=_text(f"{verdict.task or '-'}/{verdict.spec}"),
        name=_text(verdict.run_id),
        time="0",
    )
    value = "-" if verdict.value is None else f"{verdict.value:.2f}"
    reason = verdict.reason or ""
    if verdict.label == "fail":
        failure = ET.SubElement(case, "failure", message=_text(reason or "failed"), type="fail")
        failure.text = _text(f"value {value}: {reason}" if reason else f"value {value}")
    elif verdict.label == "error":
        error = ET.SubElement(case, "error", message=_text(reason or "could not be scored"), type="error")
        error.text = _text(reason)
    trace = verdict.to_dict().get("trace_id")
    out = ET.SubElement(case, "system-out")
    out.text = _text(f"run {verdict.run_id} trace {trace or '-'} label {verdict.label} value {value}")


def junit_xml(verdicts: Sequence[VerdictView], *, empty: str | None = None, allowed: bool = False) -> str:
    """The document; `empty` is why nothing was scored (one test case says it)."""
    failures = sum(1 for v in verdicts if v.label == "fail")
    errors = sum(1 for v in verdicts if v.label == "error")
    tests, skipped = len(verdicts), 0
    if empty is not None:
        tests += 1
        skipped, errors = (1, errors) if allowed else (0, errors + 1)
    counts = {"tests": str(tests), "failures": str(failures), "errors": str(errors)}
    root = ET.Element("testsuites", {"name": "tracescore", "time": "0", **counts})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": "tracescore score",
            **counts,
            "skipped": str(skipped),
            "time": "0",
            "timestamp": datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds"),
            "hostname": _text(socket.gethostname()),
        },
    )
    for verdict in verdicts:
        _case(suite, verdict)
    if empty is not None:
        case = ET.SubElement(suite, "testcase", classname="tracescore", name="nothing scored", time="0")
        kind = "skipped" if allowed else "error"
        element = ET.SubElement(case, kind, message=_text(empty))
        if not allowed:
            element.set("type", "nothing_scored")
            element.text = _text(empty)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(
    verdicts: Sequence[VerdictView], stream: TextIO, *, empty: str | None = None, allowed: bool = False
) -> None:
    stream.write(junit_xml(verdicts, empty=empty, allowed=allowed))

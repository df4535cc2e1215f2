"""GitHub Actions annotations for `score`: when `GITHUB_ACTIONS` is `true`, each failing or error
verdict (and a score that scored nothing) is also printed as an `::error title=…::…` workflow command,
which the run's summary and the pull request show. On stderr, beside the normal output: a JSON or
JUnit document on stdout stays whole when redirected to a file (the runner reads both streams)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TextIO

from scoring.report.text import VerdictView

_MAX_ANNOTATIONS = 50  # GitHub shows at most 10 errors a step (50 a job); the rest are counted


def in_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _data(text: str) -> str:
    """A command's message, escaped as GitHub's toolkit escapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(title: str, message: str) -> str:
    return f"::error title={_property(title)}::{_data(message)}"


def annotation_lines(verdicts: Sequence[VerdictView], *, empty: str | None = None) -> list[str]:
    lines = []
    bad = [v for v in verdicts if v.label != "pass"]
    for verdict in bad[:_MAX_ANNOTATIONS]:
        what = "could not be scored" if verdict.label == "error" else "failed"
        title = f"tracescore: {verdict.task or '-'}/{verdict.spec} {what}"
        value = "" if verdict.value is None else f" (value {verdict.value:.2f})"
        lines.append(annotation(title, f"run {verdict.run_id}{value}: {verdict.reason or verdict.label}"))
    if len(bad) > _MAX_ANNOTATIONS:
        more = len(bad) - _MAX_ANNOTATIONS
        lines.append(annotation("tracescore", f"and {more} more failing verdict(s): see the step's output"))
    if empty is not None:
        lines.append(annotation("tracescore: nothing scored", empty))
    return lines


def annotate(
    verdicts: Sequence[VerdictView], stream: TextIO, *, empty: str | None = None, allowed: bool = False
) -> None:
    """Print the annotations when running in GitHub Actions (nothing scored under --allow-empty is no
    error)."""
    if not in_github_actions():
        return
    for line in annotation_lines(verdicts, empty=None if allowed else empty):
        print(line, file=stream)

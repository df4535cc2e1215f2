"""Why a verdict did not pass, as a failed test says it: the verdict's line as `tracescore score`
prints it, each gate and check it did not satisfy (kind, target, detail), and the run's executions."""

from __future__ import annotations

import json
from typing import Any

from scoring import Evidence, Verdict
from scoring.report.text import ms, table, verdict_value

_MAX_TEXT = 120
_MAX_EXECUTIONS = 50


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def _arguments(value: Any, valid: bool) -> str:
    if not valid:
        return "(not JSON)"
    return _cut(json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": ")))


def explain(verdict: Verdict, evidence: Evidence | None) -> str:
    lines = [
        f"run {verdict.run_id} (trace {verdict.trace_id}, task {verdict.task or '-'}), "
        f"spec {verdict.spec!r}: {verdict.label.upper()} {verdict_value(verdict)}",
        f"  reason: {verdict.reason or '-'}",
    ]
    unmet = [("gate", c) for c in verdict.gates if not c.satisfied]
    unmet += [("check", c) for c in verdict.checks if not c.satisfied]
    if unmet:
        lines.append("  not satisfied:")
        rows = [[what, c.kind, c.target, c.detail] for what, c in unmet]
        lines += ["    " + line for line in table(["TYPE", "CHECK", "TARGET", "DETAIL"], rows, {3: 160})]
    if evidence is None:
        return "\n".join(lines)
    executions = evidence.executions
    lines.append(f"  executions ({len(executions)}):")
    rows = [
        [
            str(n),
            e.tool_name,
            _arguments(e.arguments, e.arguments_valid),
            "error" if e.error else ("paused" if e.paused else "ok"),
            ms(e.duration_ms),
            e.agent_path or "-",
        ]
        for n, e in enumerate(executions[:_MAX_EXECUTIONS], 1)
    ]
    header = ["#", "TOOL", "ARGUMENTS", "OUTCOME", "MS", "AGENT"]
    lines += ["    " + line for line in table(header, rows)] if rows else ["    (none)"]
    if len(executions) > _MAX_EXECUTIONS:
        lines.append(f"    … and {len(executions) - _MAX_EXECUTIONS} more")
    return "\n".join(lines)

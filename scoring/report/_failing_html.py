"""The HTML report's failing runs: one row per `fail` or `error` verdict, and under it a `<details>`
that opens (no script) to what the run did beside why it failed: the checks and gates it did not
satisfy, each with its reason, and its tool executions (tool, arguments, result, error, duration,
agent path), as `scoring/report/_run_detail.py` gathered them.

Run and trace ids are long: they print on one line, cut with an ellipsis where the column is narrow,
the whole id in the cell's text (copied whole) and its tooltip.
"""

from __future__ import annotations

from typing import Any

from scoring.report._charts import attr, exact
from scoring.report.build import Report
from scoring.report.text import duration, gate_note, number, trace_link
from scoring.verdict.record import CheckResult

_HEAD = (
    '<tr class="head"><th>completed (UTC)</th><th>run</th><th>trace id</th><th>task</th><th>spec</th>'
    "<th>result</th><th class=num>value</th><th>reason</th></tr>"
)
_COLUMNS = 8


def _id(value: str, href: str | None = None) -> str:
    text = f'<span class="id mono" title="{attr(value)}">{attr(value)}</span>'
    return f'<a href="{attr(href)}">{text}</a>' if href else text


def _checks(run: dict[str, Any]) -> str:
    failed = run.get("failed_checks") or []
    if not failed:
        reason = run["reason"] or "no check failed (the scorer could not judge this run)"
        return f'<div class="checks"><h3>why</h3><p>{attr(reason)}</p></div>'
    items = "".join(
        f'<li class="check" data-kind="{attr(c["kind"])}"><b>{attr(c["kind"])}</b>'
        f"{' gate' if c.get('gate') else ''} <code>{attr(c['target'])}</code>: {attr(c['detail'])}</li>"
        for c in failed
    )
    return f'<div class="checks"><h3>checks not met</h3><ul>{items}</ul></div>'


def _state(execution: dict[str, Any]) -> str:
    if execution["error"]:
        kind = execution.get("error_type") or "error"
        message = execution.get("error_message")
        return f'<span class="badge fail">{attr(kind)}</span> {attr(message or "")}'.rstrip()
    if execution["paused"]:
        return '<span class="badge error">paused</span>'
    if execution["from_history"]:
        return '<span class="badge error">from history</span>'
    return ""


def _executions(run: dict[str, Any]) -> str:
    executions = run.get("executions") or []
    total = int(run.get("executions_total", len(executions)))
    if not executions:
        return '<div class="calls"><h3>executions</h3><p class="empty">no tool executions stored</p></div>'
    rows = "".join(
        f'<tr class="execution{" bad" if e["error"] or e["paused"] or e["from_history"] else ""}" '
        f'data-tool="{attr(e["tool"])}" data-duration-ms="{exact(e["duration_ms"])}">'
        f'<td class="name" data-label="tool">{attr(e["tool"])}</td>'
        f'<td class="text mono" data-label="arguments">{attr(e["arguments"] or "-")}</td>'
        f'<td class="text mono" data-label="result">{attr(e["result"] or "-")}</td>'
        f'<td class="text" data-label="error">{_state(e)}</td>'
        f'<td class="num" data-label="duration">{duration(e["duration_ms"])}</td>'
        f'<td class="mono path" data-label="agent path">{attr(e["agent_path"] or "-")}</td></tr>'
        for e in executions
    )
    more = f'<p class="note">the first {len(executions)} of {total}</p>' if total > len(executions) else ""
    return (
        '<div class="calls"><h3>executions</h3><table class="executions stack">'
        '<tr class="head"><th>tool</th><th>arguments</th><th>result</th><th>error</th>'
        f"<th class=num>duration</th><th>agent path</th></tr>{rows}</table>{more}</div>"
    )


def _gated(run: dict[str, Any]) -> str:
    """Which gate failed the run, when one did (value 1.00 yet failed), as `score` and `watch` say it."""
    gates = [
        CheckResult(c["kind"], c["target"], False, c["detail"])
        for c in run.get("failed_checks") or []
        if c["gate"]
    ]
    note = gate_note(run["label"], gates)
    return f' <small class="meta gated">{attr(note)}</small>' if note else ""


def _run(run: dict[str, Any], trace_url: str | None) -> str:
    n = int(run.get("executions_total", len(run.get("executions") or [])))
    checks = len(run.get("failed_checks") or [])
    summary = f"what it did: {n} execution(s)" + (f", {checks} check(s) not met" if checks else "")
    return (
        f'<tr class="failing" data-run="{attr(run["run_id"])}" data-spec="{attr(run["spec"])}" '
        f'data-trace="{attr(run["trace_id"])}">'
        f'<td class="mono when" data-label="completed">{attr(run["completed_at"] or "-")}</td>'
        f'<td data-label="run">{_id(run["run_id"])}</td>'
        f'<td data-label="trace id">{_id(run["trace_id"], trace_link(trace_url, run["trace_id"]))}</td>'
        f'<td class="name" data-label="task">{attr(run["task"] or "-")}</td>'
        f'<td class="name" data-label="spec">{attr(run["spec"])}</td>'
        f'<td data-label="result"><span class="badge {attr(run["label"])}">{attr(run["label"])}</span>'
        f"{_gated(run)}</td>"
        f'<td class="num" data-label="value" data-value="{exact(run["value"])}">{number(run["value"])}</td>'
        f'<td class="reason" data-label="reason">{attr(run["reason"] or "")}</td></tr>'
        f'<tr class="detail" data-run="{attr(run["run_id"])}" data-spec="{attr(run["spec"])}">'
        f'<td colspan="{_COLUMNS}"><details><summary>{summary}</summary>'
        f'<div class="run-detail">{_checks(run)}{_executions(run)}</div></details></td></tr>'
    )


def failing_section(report: Report, trace_url: str | None = None) -> str:
    if not report.failing_runs:
        return '<p class="empty">Every scored run passed.</p>'
    rows = "".join(_run(run, trace_url) for run in report.failing_runs)
    more = ""
    if report.failing_runs_total > len(report.failing_runs):
        more = (
            f'<p class="note">The {len(report.failing_runs)} most recent of {report.failing_runs_total}; '
            "<code>tracescore score --format json</code> lists them all.</p>"
        )
    return (
        '<p class="note">Open a run to see the checks it did not meet beside the tool executions it made.</p>'
        f'<div class="wrap"><table id="failing-table" class="stack">{_HEAD}{rows}</table></div>{more}'
    )

"""`tracescore report --format html`: one self-contained page (inline CSS and SVG; no script, font, image
or stylesheet from anywhere) showing the same figures as `report --format json`, which it also embeds
whole in `<script type="application/json" id="tracescore-report">` for machines.

Rates and values are printed as the terminal tables print them (`scoring/report/text.py`), with two
decimals; durations in the unit each needs (`duration`: `22.7 µs`, `1.24 s`). Elements that carry a
figure also carry the exact value in a `data-*` attribute. Below 640 px each table row becomes a card
of labelled lines (every cell carries its column's name in `data-label`). The failing runs, each
opening to its executions, are drawn by `_failing_html.py`.
"""

from __future__ import annotations

import json
from typing import Any

from scoring.report._charts import attr, exact, history_chart, latency_chart
from scoring.report._failing_html import failing_section
from scoring.report.aggregate import TaskResult
from scoring.report.build import Report
from scoring.report.text import duration, number

_CSS = """
:root{--fg:#1d2433;--muted:#5b6475;--line:#e3e6ec;--card:#f6f7f9;--pass:#1f8a4c;--fail:#c8372d;
--error:#9a6400;--zone:#fff4cc;--zone-edge:#e0a800;--accent:#2f62c9}
*{box-sizing:border-box}
body{margin:0;color:var(--fg);background:#fff;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans","Liberation Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px 32px 48px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:34px 0 10px;padding-bottom:5px;border-bottom:2px solid var(--line)}
p{margin:6px 0}
.meta,.note{color:var(--muted);font-size:12.5px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;margin:18px 0 6px}
.card{background:var(--card);border-radius:8px;padding:10px 14px}
.card b{display:block;font-size:22px;font-variant-numeric:tabular-nums}
.card span{color:var(--muted);font-size:12px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th{text-align:left;font-weight:600;color:var(--muted);font-size:11.5px;text-transform:uppercase;
letter-spacing:.03em;border-bottom:1px solid var(--line);padding:6px 8px}
td{padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
td.num{text-align:right;white-space:nowrap}
th.num{text-align:right}
tr.zone td{background:var(--zone)}
tr.zone td:first-child{box-shadow:inset 4px 0 0 var(--zone-edge)}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:11.5px;font-weight:600;
white-space:nowrap}
.badge.zone{background:var(--zone-edge);color:#3b2a00}
.badge.pass{background:#dff3e6;color:var(--pass)}
.badge.fail{background:#fde2df;color:var(--fail)}
.badge.error{background:#fbeccb;color:var(--error)}
.bar{display:inline-block;width:60px;height:8px;background:#e6e9ee;border-radius:4px;margin-left:8px;
vertical-align:middle;overflow:hidden}
.bar i{display:block;height:100%;background:var(--pass)}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(520px,100%),1fr));gap:16px}
section{overflow-x:auto}
figure{margin:0;background:var(--card);border-radius:8px;padding:12px 14px}
figcaption{font-weight:600;margin-bottom:4px}
figcaption small{font-weight:400;color:var(--muted)}
svg{display:block;max-width:100%;height:auto}
svg text{font:11px system-ui,"DejaVu Sans",sans-serif;fill:var(--muted)}
svg .axis{stroke:#c9ced6}
svg text.label{paint-order:stroke;stroke:#f6f7f9;stroke-width:3px;stroke-linejoin:round}
svg .grid{stroke:#e3e6ec}
.nowrap{white-space:nowrap}
.mono,code{font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",monospace;font-size:12px}
.reason{max-width:460px}
td.when{white-space:nowrap}
.stats{font-size:12.5px;color:var(--muted);margin-top:4px}
.stats b{color:var(--fg);font-weight:600}
details{margin-top:6px}
summary{cursor:pointer;color:var(--muted);font-size:12px}
.empty{color:var(--muted);font-style:italic}
td.name{white-space:nowrap}
td.latency{min-width:15em}
.wrap{overflow-x:auto;max-width:100%}
.id{display:inline-block;max-width:12ch;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;
vertical-align:bottom}
tr.failing td{border-bottom:none}
tr.detail td{padding:0 8px 8px}
tr.detail summary{font-size:12.5px}
.run-detail{display:flex;flex-wrap:wrap;gap:10px 24px;background:var(--card);border-radius:6px;
padding:10px 12px;margin-top:6px}
.run-detail h3{font-size:12px;margin:0 0 4px;color:var(--muted);text-transform:uppercase;
letter-spacing:.03em}
.run-detail .checks{flex:1 1 200px;max-width:340px;min-width:0}
.run-detail .checks ul{margin:0;padding-left:18px}
.run-detail .calls{flex:3 1 420px;min-width:0;overflow-x:auto}
.calls td,.calls th{font-size:12px;padding:4px 6px}
.calls td.text{max-width:300px;overflow-wrap:break-word}
.calls td.name,.calls td.path{white-space:nowrap}
.calls tr.bad td{background:#fdf0ee}
@media print{.charts{grid-template-columns:1fr}}
@media (max-width:640px){
main{padding:16px 14px 32px}
table.stack,table.stack>tbody,table.stack>tbody>tr,table.stack>tbody>tr>td{display:block;width:100%}
table.stack>tbody>tr.head{display:none}
table.stack>tbody>tr{border:1px solid var(--line);border-radius:6px;margin:0 0 8px;padding:4px 0}
table.stack>tbody>tr.failing{border-bottom:none;border-radius:6px 6px 0 0;margin-bottom:0}
table.stack>tbody>tr.detail{border-top:none;border-radius:0 0 6px 6px}
table.stack>tbody>tr>td{border:none;padding:3px 10px;text-align:right;overflow:hidden;max-width:none}
table.stack>tbody>tr>td::before{content:attr(data-label);float:left;margin-right:12px;color:var(--muted);
font-size:11.5px;text-transform:uppercase;white-space:nowrap}
table.stack>tbody>tr.detail>td{text-align:left}
table.stack>tbody>tr.detail>td::before{content:none}
tr.zone td:first-child{box-shadow:none}
table.stack>tbody>tr.zone{box-shadow:inset 4px 0 0 var(--zone-edge);background:var(--zone)}
.run-detail .calls{overflow-x:visible}
.calls td.text{max-width:none}
.id{max-width:24ch}
}
"""


def _cards(report: Report) -> str:
    tasks = report.tasks
    scored = sum(t.n_scored for t in tasks)
    passed = sum(t.n_passed for t in tasks)
    zone = sum(1 for t in tasks if t.in_learning_zone)
    cards = [
        ("task-spec-pairs", str(len(tasks)), "task/spec pairs"),
        ("verdicts-scored", str(scored), "verdicts scored"),
        ("overall-pass-rate", number(passed / scored if scored else None), "pass rate overall"),
        ("learning-zone", str(zone), "in the learning zone"),
    ]
    if "failing" in report.sections:
        cards.append(("failing-runs", str(report.failing_runs_total), "failing or unscored verdicts"))
    if "latency" in report.sections:
        cards.append(("tools", str(len(report.tool_latency)), "tools timed"))
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card" id="card-{i}"><b>{attr(v)}</b><span>{attr(t)}</span></div>'
            for i, v, t in cards
        )
        + "</div>"
    )


def _execution_latency(result: TaskResult) -> str:
    """What the task's clean executions took: p50/p95/p99 over its runs, or why there is nothing."""
    summary = result.execution_latency
    if not summary or not summary.get("n"):
        return '<span class="empty">no latency data</span>'
    figures = " ".join(
        f'<span class="nowrap">{p} {duration(summary[f"{p}_ms"])}{" ·" if p != "p99" else ""}</span>'
        for p in ("p50", "p95", "p99")
    )
    return f'{figures} <small class="meta">({summary["n"]} clean execution(s))</small>'


def _latency_checks(result: TaskResult) -> str:
    """The spec's percentile bounds over the task's runs (when it sets them), then what was observed."""
    observed = _execution_latency(result)
    if not result.latency:
        return observed
    parts = []
    for e in result.latency:
        mark = "" if e["satisfied"] else '<span class="badge fail">FAIL</span> '
        parts.append(
            f"{mark}{attr(e['percentile'])} {attr(e['tool'])} "
            f'<span class="nowrap">{duration(e["observed_ms"])}/{duration(e["bound_ms"])}</span>'
        )
    return "<br>".join([*parts, observed])


def _rate_cell(name: str, label: str, value: float | None) -> str:
    return (
        f'<td class="num" data-field="{name}" data-label="{label}" data-value="{exact(value)}">'
        f"{number(value)}</td>"
    )


_SCORER_ERRORS = (
    "runs the scorer could not judge (error verdicts: unscored, never failures); "
    "tool calls that errored are counted in the tool latency table"
)
_LATENCY_PERCENTILES = (
    "nearest-rank p50 / p95 / p99 of the clean tool executions in this task's runs; "
    "the spec's own percentile bounds first, when it sets them"
)
_ZONE_BADGE = '<span class="badge zone">learning zone</span>'


def _tasks(report: Report) -> str:
    if not report.tasks:
        return '<p class="empty">No complete run matched any spec.</p>'
    # Each cell carries its column's name (data-label): on a narrow screen a row becomes a card of
    # labelled lines instead of a table cut off at the screen's edge.
    head = (
        '<tr class="head"><th>task</th><th>spec</th><th class=num>passed</th><th class=num>pass rate</th>'
        "<th class=num>mean value</th><th class=num>k</th><th class=num>pass@k</th>"
        f'<th class=num>pass^k</th><th class=num title="{_SCORER_ERRORS}">scorer errors</th>'
        f'<th title="{_LATENCY_PERCENTILES}">latency percentiles</th><th>zone</th></tr>'
    )
    rows = []
    for r in report.tasks:
        width = 0 if r.pass_rate is None else round(r.pass_rate * 100)
        zone = r.in_learning_zone
        rows.append(
            f'<tr class="task{" zone" if zone else ""}" data-task="{attr(r.task or "")}" '
            f'data-spec="{attr(r.spec)}" data-learning-zone="{str(zone).lower()}">'
            f'<td class="name" data-label="task">{attr(r.task or "-")}</td>'
            f'<td class="name" data-label="spec">{attr(r.spec)}</td>'
            f'<td class="num" data-field="passed" data-label="passed">{r.n_passed}/{r.n_scored}</td>'
            f'<td class="num" data-field="pass_rate" data-label="pass rate" '
            f'data-value="{exact(r.pass_rate)}">'
            f'{number(r.pass_rate)}<span class="bar"><i style="width:{width}%"></i></span></td>'
            f"{_rate_cell('mean_value', 'mean value', r.mean_value)}"
            f'<td class="num" data-field="k" data-label="k">{r.k}</td>'
            f"{_rate_cell('pass_at_k', 'pass@k', r.pass_at_k)}"
            f"{_rate_cell('pass_hat_k', 'pass^k', r.pass_hat_k)}"
            f'<td class="num" data-field="n_errors" data-label="scorer errors" title="{_SCORER_ERRORS}">'
            f"{r.n_errors}</td>"
            f'<td class="latency" data-field="execution_latency" data-label="latency">'
            f"{_latency_checks(r)}</td>"
            f'<td data-label="zone">{_ZONE_BADGE if zone else ""}</td></tr>'
        )
    return f'<div class="wrap"><table id="tasks-table" class="stack">{head}{"".join(rows)}</table></div>'


def _history(report: Report) -> str:
    if not report.history:
        return (
            '<p class="empty">No stored verdicts for these specs yet: '
            "<code>tracescore serve --specs</code> and <code>tracescore score</code> store them.</p>"
        )
    by_spec: dict[str, list[dict[str, Any]]] = {}
    for point in report.history:
        by_spec.setdefault(point["spec"], []).append(point)
    figures = []
    for spec, points in by_spec.items():
        scored = sum(p["n_scored"] for p in points)
        rows = "".join(
            f'<tr class="bucket" data-start="{attr(p["start"])}"><td class="mono">{attr(p["start"])}</td>'
            f'<td class="num">{p["n_passed"]}/{p["n_scored"]}</td><td class="num">{p["n_errors"]}</td>'
            f'<td class="num" data-value="{exact(p["pass_rate"])}">{number(p["pass_rate"])}</td></tr>'
            for p in points
        )
        figures.append(
            f'<figure class="history" data-spec="{attr(spec)}"><figcaption>{attr(spec)} '
            f"<small>{len(points)} {attr(report.history_bucket)}(s), {scored} scored runs</small>"
            "</figcaption>"
            f"{history_chart(spec, points, report.history_bucket)}"
            "<details><summary>figures</summary><table><tr><th>bucket start (UTC)</th>"
            f'<th class=num>passed</th><th class=num title="{_SCORER_ERRORS}">scorer errors</th>'
            "<th class=num>pass rate</th></tr>"
            f"{rows}</table></details></figure>"
        )
    return (
        f'<p class="note">Latest stored verdict of each run, per {attr(report.history_bucket)} of the run\'s '
        "completion (UTC). Bars: runs scored in the bucket.</p>"
        f'<div class="charts">{"".join(figures)}</div>'
    )


_LATENCY_FIELDS = ("p50_ms", "p95_ms", "p99_ms", "min_ms", "max_ms", "mean_ms")


def _latency(report: Report) -> str:
    if not report.tool_latency:
        return '<p class="empty">No tool executions in the runs scored.</p>'
    head = (
        '<tr class="head"><th>tool</th><th class=num>clean executions</th><th class=num>errored</th>'
        + "".join(f"<th class=num>{f.removesuffix('_ms')}</th>" for f in _LATENCY_FIELDS)
        + "</tr>"
    )
    rows, figures = [], []
    for entry in report.tool_latency:
        tool = entry["tool"]
        cells = "".join(
            f'<td class="num" data-field="{f}" data-label="{f.removesuffix("_ms")}" '
            f'data-value="{exact(entry.get(f))}">{duration(entry.get(f))}</td>'
            for f in _LATENCY_FIELDS
        )
        rows.append(
            f'<tr class="tool" data-tool="{attr(tool)}"><td class="name" data-label="tool">{attr(tool)}</td>'
            f'<td class="num" data-field="n" data-label="clean executions">{entry["n"]}</td>'
            f'<td class="num" data-field="n_errored" data-label="errored">{entry["n_errored"]}</td>'
            f"{cells}</tr>"
        )
        if not entry["n"]:
            continue
        stats = " · ".join(
            f"{name} <b>{duration(entry[f'{name}_ms'])}</b>" for name in ("p50", "p95", "p99", "max", "mean")
        )
        figures.append(
            f'<figure class="latency" data-tool="{attr(tool)}"><figcaption>{attr(tool)} '
            f"<small>{entry['n']} clean execution(s)</small></figcaption>{latency_chart(entry)}"
            f'<div class="stats">{stats}</div></figure>'
        )
    return (
        '<p class="note">Clean executions (not errored, paused or replayed) in the runs scored; '
        "nearest-rank percentiles, as the specs' p50_ms/p95_ms/p99_ms bounds.</p>"
        f'<div class="wrap"><table id="latency-table" class="stack">{head}{"".join(rows)}</table></div>'
        f'<div class="charts" style="margin-top:14px">{"".join(figures)}</div>'
    )


def report_html(report: Report, source: str = "", trace_url: str | None = None) -> str:
    """The page; `trace_url` (e.g. `https://tracing.example/trace/{trace_id}`) links each failing
    run's trace id to the user's tracing UI."""
    specs = ", ".join(f"{attr(s['name'])} <code>{attr(s['fingerprint'][:12])}</code>" for s in report.specs)
    body = [
        "<header><h1>tracescore report</h1>",
        f'<p class="meta">Generated {attr(report.generated_at)}'
        + (f" from {attr(source)}" if source else "")
        + (f" · specs: {specs}" if specs else "")
        + "</p></header>",
        _cards(report),
        '<section id="tasks"><h2>Pass rates per task</h2>'
        '<p class="note">One row per task and spec over its rollouts (runs). Highlighted rows are in the '
        "<b>learning zone</b>: some rollouts passed and some failed.</p>" + _tasks(report) + "</section>",
    ]
    if "history" in report.sections:
        body.append(
            f'<section id="history"><h2>Pass rate over time, per spec</h2>{_history(report)}</section>'
        )
    if "latency" in report.sections:
        body.append(f'<section id="latency"><h2>Tool latency</h2>{_latency(report)}</section>')
    if "failing" in report.sections:
        body.append(
            '<section id="failing"><h2>Failing runs '
            f'<small class="meta">({report.failing_runs_total})</small></h2>'
            f"{failing_section(report, trace_url)}</section>"
        )
    data = json.dumps(report.to_dict(), default=str).replace("</", "<\\/")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        "<title>tracescore report</title>"
        f"<style>{_CSS}</style></head><body><main>{''.join(body)}</main>"
        f'<script type="application/json" id="tracescore-report">{data}</script></body></html>\n'
    )

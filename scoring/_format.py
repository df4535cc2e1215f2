"""Verdicts and task results as text a person reads in a terminal, or as JSON for machines."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

from scoring._aggregate import TaskResult
from scoring._verdict import Verdict


def _table(header: list[str], rows: list[list[str]], widths: dict[int, int] | None = None) -> list[str]:
    widths = widths or {}
    sizes = [min(widths.get(i, 200), max([len(h), *(len(r[i]) for r in rows)])) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c[: sizes[i]].ljust(sizes[i]) for i, c in enumerate(cells)).rstrip()

    return [line(header), line(["-" * s for s in sizes]), *(line(r) for r in rows)]


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def verdicts_text(verdicts: Sequence[Verdict]) -> str:
    if not verdicts:
        return "no complete run matched any spec"
    rows = [
        [v.run_id, v.task or "-", v.spec, v.label.upper(), _number(v.value), v.reason or ""] for v in verdicts
    ]
    out = _table(["RUN", "TASK", "SPEC", "RESULT", "VALUE", "REASON"], rows, {0: 36, 1: 24, 2: 28})
    passed = sum(1 for v in verdicts if v.label == "pass")
    failed = sum(1 for v in verdicts if v.label == "fail")
    errors = len(verdicts) - passed - failed
    summary = f"{len(verdicts)} verdict(s): {passed} passed, {failed} failed"
    out.append("")
    out.append(summary + (f", {errors} could not be scored" if errors else ""))
    return "\n".join(out)


def verdicts_json(verdicts: Sequence[Verdict]) -> str:
    return json.dumps([v.to_dict() for v in verdicts], indent=2, default=str)


def tasks_text(results: Sequence[TaskResult]) -> str:
    if not results:
        return "no complete run matched any spec"
    rows = [
        [
            r.task or "-",
            r.spec,
            f"{r.n_passed}/{r.n_scored}",
            _number(r.pass_rate),
            _number(r.mean_value),
            str(r.k),
            _number(r.pass_at_k),
            _number(r.pass_hat_k),
            "learning zone" if r.in_learning_zone else "",
        ]
        for r in results
    ]
    header = ["TASK", "SPEC", "PASSED", "PASS RATE", "MEAN", "K", "PASS@K", "PASS^K", ""]
    out = _table(header, rows, {0: 32, 1: 28})
    zone = sum(1 for r in results if r.in_learning_zone)
    out.append("")
    out.append(
        f"{len(results)} task/spec pair(s); {zone} in the learning zone (some rollouts pass, some fail)"
    )
    out.extend(_latency_text(results))
    return "\n".join(out)


def _latency_cell(entry: dict[str, object]) -> str:
    return f"{entry['percentile']} {entry['tool']} {entry['observed_ms']:.4g}/{entry['bound_ms']:g} ms"


def _latency_text(results: Sequence[TaskResult]) -> list[str]:
    """Latency percentiles over each task's runs (spec latency p50_ms/p95_ms/p99_ms), one line each."""
    rows = [
        [
            r.task or "-",
            r.spec,
            str(e["tool"]),
            str(e["percentile"]),
            f"{e['observed_ms']:.4g}",
            f"{e['bound_ms']:g}",
            str(e["n"]),
            f"{e['window_start']} .. {e['window_end']}" if e["window_start"] else "all runs",
            "ok" if e["satisfied"] else "FAIL",
        ]
        for r in results
        for e in r.latency
    ]
    if not rows:
        return []
    header = ["TASK", "SPEC", "TOOL", "PCT", "OBSERVED MS", "BOUND MS", "N", "WINDOW", ""]
    failed = sum(1 for row in rows if row[-1] == "FAIL")
    return [
        "",
        "latency over each task's runs (nearest-rank percentiles):",
        *_table(header, rows, {0: 32, 1: 28}),
        "",
        f"{len(rows)} latency bound(s); {failed} exceeded",
    ]


def tasks_json(results: Sequence[TaskResult]) -> str:
    return json.dumps([r.to_dict() for r in results], indent=2)


def tasks_html(results: Sequence[TaskResult]) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in ("task", "spec", "passed", "pass rate", "mean", "k", "pass@k", "pass^k", "latency")
    )
    body = []
    for r in results:
        cells = [
            r.task or "-",
            r.spec,
            f"{r.n_passed}/{r.n_scored}",
            _number(r.pass_rate),
            _number(r.mean_value),
            str(r.k),
            _number(r.pass_at_k),
            _number(r.pass_hat_k),
            "; ".join(("" if e["satisfied"] else "FAIL ") + _latency_cell(e) for e in r.latency),
        ]
        style = ' class="zone"' if r.in_learning_zone else ""
        body.append(f"<tr{style}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return (
        "<!doctype html><meta charset=utf-8><title>tracescore report</title>"
        "<style>body{font:14px system-ui;margin:2em}table{border-collapse:collapse}"
        "td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}"
        "tr.zone{background:#fff6d5}</style>"
        "<h1>tracescore: per-task pass rates</h1><p>Highlighted rows are in the learning zone.</p>"
        f"<table><tr>{head}</tr>{''.join(body)}</table>\n"
    )

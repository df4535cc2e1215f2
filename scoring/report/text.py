"""Verdicts, task results and reports as text a person reads in a terminal, or as JSON for machines.

The HTML page (scoring/report/html.py) prints its figures with `number` from here, so a rate reads
the same in the terminal and on the page; durations there go through `duration`, in the unit each
value needs (µs, ms, s), where the terminal's columns are headed in ms and keep `ms`.
"""

from __future__ import annotations

import itertools
import json
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TextIO

import orjson

from scoring.report.aggregate import TaskResult
from scoring.report.build import Report
from scoring.verdict.record import CheckResult


class VerdictView(Protocol):
    """What printing a verdict reads: a `Verdict`, or a set-based verdict not yet made one
    (scoring/batch/score.py `Scored`)."""

    @property
    def run_id(self) -> str: ...
    @property
    def trace_id(self) -> str: ...
    @property
    def task(self) -> str | None: ...
    @property
    def spec(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def value(self) -> float | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def gates(self) -> tuple[CheckResult, ...]: ...
    def to_dict(self) -> dict[str, Any]: ...


def table(header: list[str], rows: list[list[str]], widths: dict[int, int] | None = None) -> list[str]:
    widths = widths or {}
    sizes = [min(widths.get(i, 200), max([len(h), *(len(r[i]) for r in rows)])) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c[: sizes[i]].ljust(sizes[i]) for i, c in enumerate(cells)).rstrip()

    return [line(header), line(["-" * s for s in sizes]), *(line(r) for r in rows)]


def number(value: float | None) -> str:
    """Rates and values, as every rendering prints them: two decimals."""
    return "-" if value is None else f"{value:.2f}"


def ms(value: float | None) -> str:
    """Milliseconds, as every rendering prints them: four significant digits, thousands grouped."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


_UNITS = (("ns", 1e-6), ("µs", 1e-3), ("ms", 1.0), ("s", 1000.0))


def duration(value_ms: float | None) -> str:
    """A duration given in milliseconds, in the unit it needs, three significant digits: `22.7 µs`,
    `350 ms`, `1.24 s` (the HTML page; the terminal tables keep `ms` under their ms headers)."""
    if value_ms is None:
        return "-"
    if value_ms == 0:
        return "0 ms"
    size = abs(value_ms)
    index = max((i for i, (_, factor) in enumerate(_UNITS) if size >= factor), default=0)
    while True:
        unit, factor = _UNITS[index]
        text = f"{value_ms / factor:.3g}"
        if abs(float(text)) < 1000 or index == len(_UNITS) - 1:
            break
        index += 1  # 999.96 µs rounds to 1000: say 1 ms
    if "e" in text:  # 1000 s and beyond: whole seconds, grouped
        text = f"{value_ms / factor:,.0f}"
    return f"{text} {unit}"


def verdict_value(verdict: VerdictView) -> str:
    """A verdict's value as `score`, `watch` and the demo print it: `1.00 (failed by the strict gate)`
    when a gate failed a run whose value counts every check met."""
    gated = gate_note(verdict.label, verdict.gates) if verdict.label == "fail" else ""
    return f"{number(verdict.value)} ({gated})" if gated else number(verdict.value)


def trace_link(trace_url: str | None, trace_id: str) -> str | None:
    """`--trace-url`'s template with the trace id in place of `{trace_id}`; None without a template."""
    return trace_url.replace("{trace_id}", urllib.parse.quote(trace_id, safe="")) if trace_url else None


def verdicts_text(verdicts: Sequence[VerdictView], trace_url: str | None = None) -> str:
    """The verdicts as a table; with `trace_url`, a last column links each run's trace (issue 30)."""
    if not verdicts:
        return "no complete run matched any spec"
    rows = [
        [v.run_id, v.trace_id, v.task or "-", v.spec, v.label.upper(), verdict_value(v), v.reason or ""]
        + ([trace_link(trace_url, v.trace_id) or ""] if trace_url else [])
        for v in verdicts
    ]
    header = ["RUN", "TRACE", "TASK", "SPEC", "RESULT", "VALUE", "REASON"] + (
        ["TRACE URL"] if trace_url else []
    )
    out = table(header, rows, {0: 36, 1: 32, 2: 24, 3: 28})
    passed = sum(1 for v in verdicts if v.label == "pass")
    failed = sum(1 for v in verdicts if v.label == "fail")
    errors = len(verdicts) - passed - failed
    summary = f"{len(verdicts)} verdict(s): {passed} passed, {failed} failed"
    out.append("")
    out.append(summary + (f", {errors} could not be scored" if errors else ""))
    return "\n".join(out)


def indented_json(value: Any) -> str:
    """JSON indented by two spaces, as every `--format json` prints it. orjson writes it ~15x faster
    than `json.dumps(indent=2)`, which is pure Python and was 65 of the 73 s `score --format json` took
    over a million executions (bench/README.md); what orjson cannot write (integers beyond 64 bits)
    goes through the json module. Text is UTF-8 as is, and NaN, which JSON lacks, is null."""
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value, indent=2, default=str, ensure_ascii=False)


def verdicts_json(verdicts: Sequence[VerdictView]) -> str:
    return indented_json([v.to_dict() for v in verdicts])


# Verdicts indented a few at a time: one orjson call per verdict and re-indenting its text cost twice
# this; far more at once keeps thousands of objects alive, and the cycle collector then scans them
# (bench/README.md, "score --format json").
_VERDICTS_PER_WRITE = 16


def write_verdicts_json(verdicts: Iterable[VerdictView], out: TextIO) -> None:
    """`verdicts_json` and a newline, written a few verdicts at a time: the same bytes without
    holding them all (a history's verdicts print to hundreds of MB). The items of an indented list are
    what indenting a shorter list of them gives, between its brackets."""
    first = True
    remaining = iter(verdicts)
    while chunk := list(itertools.islice(remaining, _VERDICTS_PER_WRITE)):
        items = indented_json([v.to_dict() for v in chunk])[len("[\n  ") : -len("\n]")]
        out.write(("[\n  " if first else ",\n  ") + items)
        first = False
    out.write("[]\n" if first else "\n]\n")


TASKS_LEGEND = (
    "PASSED: passing/scored runs; MEAN: mean verdict value (share of checks met); K: rollouts counted; "
    "PASS@K: chance at least one of K rollouts passes; PASS^K: chance all K pass"
)


def gate_note(label: str, gates: Iterable[CheckResult]) -> str:
    """Why a failed run can show value 1.00 (issue #20): the gates that failed it, which `value` does not
    count (docs/scoring.md), e.g. `failed by the strict gate`; empty when no gate failed it."""
    if label != "fail":
        return ""
    names = {"strict": "strict", "forbidden_tools": "forbidden-tools"}
    failed = [names.get(g.kind, g.kind) for g in gates if not g.satisfied]
    if not failed:
        return ""
    return f"failed by the {' and '.join(failed)} gate{'s' if len(failed) > 1 else ''}"


def tasks_text(results: Sequence[TaskResult]) -> str:
    if not results:
        return "no complete run matched any spec"
    rows = [
        [
            r.task or "-",
            r.spec,
            f"{r.n_passed}/{r.n_scored}",
            number(r.pass_rate),
            number(r.mean_value),
            str(r.k),
            number(r.pass_at_k),
            number(r.pass_hat_k),
            "learning zone" if r.in_learning_zone else "",
        ]
        for r in results
    ]
    header = ["TASK", "SPEC", "PASSED", "PASS RATE", "MEAN", "K", "PASS@K", "PASS^K", "ZONE"]
    out = table(header, rows, {0: 32, 1: 28})
    zone = sum(1 for r in results if r.in_learning_zone)
    out.append("")
    out.append(
        f"{len(results)} task/spec pair(s); {zone} in the learning zone (some rollouts pass, some fail)"
    )
    out.append(TASKS_LEGEND)
    out.extend(_latency_text(results))
    return "\n".join(out)


def _latency_text(results: Sequence[TaskResult]) -> list[str]:
    """Latency percentiles over each task's runs (spec latency p50_ms/p95_ms/p99_ms), one line each."""
    rows = [
        [
            r.task or "-",
            r.spec,
            str(e["tool"]),
            str(e["percentile"]),
            ms(e["observed_ms"]),
            ms(e["bound_ms"]),
            str(e["n"]),
            f"{e['window_start']} .. {e['window_end']}" if e["window_start"] else "all runs",
            "ok" if e["satisfied"] else "FAIL",
        ]
        for r in results
        for e in r.latency
    ]
    if not rows:
        return []
    header = ["TASK", "SPEC", "TOOL", "PCT", "OBSERVED MS", "BOUND MS", "N", "WINDOW", "RESULT"]
    failed = sum(1 for row in rows if row[-1] == "FAIL")
    return [
        "",
        "latency over each task's runs (nearest-rank percentiles):",
        *table(header, rows, {0: 32, 1: 28}),
        "",
        f"{len(rows)} latency bound(s); {failed} exceeded",
    ]


def tasks_json(results: Sequence[TaskResult]) -> str:
    return indented_json([r.to_dict() for r in results])


def report_json(report: Report) -> str:
    return indented_json(report.to_dict())


_SPARK = " ▁▂▃▄▅▆▇█"


def sparkline(counts: Sequence[int]) -> str:
    """A histogram in one line of block characters."""
    most = max(counts, default=0) or 1
    return "".join(_SPARK[0 if c == 0 else max(1, round(c / most * 8))] for c in counts)


def _history_text(report: Report) -> list[str]:
    out = ["", f"pass rate over time, per spec (latest stored verdict per run, by {report.history_bucket}):"]
    if not report.history:
        out.append("no stored verdicts for these specs (serve --specs and score store them)")
        return out
    rows = [
        [
            p["spec"],
            p["start"],
            f"{p['n_passed']}/{p['n_scored']}",
            str(p["n_errors"]),
            number(p["pass_rate"]),
            "█" * round((p["pass_rate"] or 0) * 20),
        ]
        for p in report.history
    ]
    out.extend(table(["SPEC", "FROM (UTC)", "PASSED", "SCORER ERRORS", "PASS RATE", ""], rows, {0: 28}))
    return out


def _tool_latency_text(report: Report) -> list[str]:
    out = ["", "tool latency, clean executions in the runs scored (nearest-rank percentiles, ms):"]
    if not report.tool_latency:
        out.append("no tool executions in the runs scored")
        return out
    rows = [
        [
            e["tool"],
            str(e["n"]),
            str(e["n_errored"]),
            ms(e.get("p50_ms")),
            ms(e.get("p95_ms")),
            ms(e.get("p99_ms")),
            ms(e.get("max_ms")),
            sparkline(e["histogram"]["counts"]) if e["n"] else "",
        ]
        for e in report.tool_latency
    ]
    out.extend(table(["TOOL", "N", "ERRORED", "P50", "P95", "P99", "MAX", "DISTRIBUTION"], rows, {0: 32}))
    return out


def _failing_text(report: Report) -> list[str]:
    out = ["", f"failing runs ({report.failing_runs_total}), most recently completed first:"]
    if not report.failing_runs:
        out.append("every scored run passed")
        return out
    rows = [
        [r["run_id"], r["trace_id"], r["task"] or "-", r["spec"], r["label"].upper(), r["reason"] or ""]
        for r in report.failing_runs
    ]
    out.extend(table(["RUN", "TRACE", "TASK", "SPEC", "RESULT", "REASON"], rows, {0: 36, 2: 24, 3: 28}))
    if report.failing_runs_total > len(report.failing_runs):
        out.append(f"(the {len(report.failing_runs)} most recent of {report.failing_runs_total})")
    return out


def report_text(report: Report) -> str:
    out = [tasks_text(report.tasks)]
    if "history" in report.sections:
        out.extend(_history_text(report))
    if "latency" in report.sections:
        out.extend(_tool_latency_text(report))
    if "failing" in report.sections:
        out.extend(_failing_text(report))
    return "\n".join(out)

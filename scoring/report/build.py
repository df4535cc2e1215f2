"""The whole of `tracescore report`: per-task statistics and, beside them, three sections read from the
stored tables:

- `history`: the pass rate of each spec over time, from the **stored** verdicts (the latest version of
  each run's verdict), bucketed by the run's completion time (`runs.completed_at`; the verdict's
  `scored_at` for a run no longer in `runs`). Re-scoring old runs does not move them in time.
- `tasks[].execution_latency`: per task, nearest-rank p50/p95/p99 of the clean executions (any tool) in
  the task's runs, so the page's per-task latency column is never empty when something was timed.
- `tool_latency`: per tool, the distribution of clean execution durations (`executions.duration_ms`) in
  the runs the report scored: nearest-rank p50/p95/p99 (as the spec's percentile bounds), min, max, mean
  and a histogram.
- `failing_runs`: the report's own `fail` and `error` verdicts with reason and trace id, the most recently
  completed first, each with the checks it failed and the executions it stored (`_run_detail.py`).

One `Report` feeds the terminal tables, the JSON and the HTML page, built by the same code from a
database file or inside a running server (POST /api/v1/report), so every rendering shows one set of
figures.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import duckdb

from scoring.checks.latency_history import nearest_rank
from scoring.report._run_detail import failed_checks, run_executions
from scoring.report.aggregate import TaskResult, aggregate
from scoring.verdict.record import Verdict

if TYPE_CHECKING:  # the CLI's parser and a server's task API import this module with no spec loaded
    from scoring.spec.specs import Spec

SECTIONS = ("history", "latency", "failing")
BUCKETS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400, "week": 7 * 86_400}
MAX_HISTORY_BUCKETS = 60  # `auto` picks the finest bucket that keeps each spec's history this short
MAX_FAILING_RUNS = 500
HISTOGRAM_BINS = 20
_MONDAY = 4 * 86_400  # 1970-01-01 was a Thursday: weeks start on Monday, 00:00 UTC


class ReportError(ValueError):
    """A report option is unusable."""


def sections(requested: Iterable[str]) -> tuple[str, ...]:
    """`history,latency` / `all` → the section names, in page order."""
    wanted: set[str] = set()
    for item in requested:
        for name in (n.strip() for n in item.split(",")):
            if name == "all":
                wanted.update(SECTIONS)
            elif name in SECTIONS:
                wanted.add(name)
            elif name:
                raise ReportError(f"unknown report section {name!r}: expected {', '.join(SECTIONS)} or all")
    return tuple(s for s in SECTIONS if s in wanted)


@dataclass(slots=True)
class Report:
    tasks: list[TaskResult]
    specs: list[dict[str, str]] = field(default_factory=list)
    generated_at: str = ""
    sections: tuple[str, ...] = ()
    history_bucket: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    tool_latency: list[dict[str, Any]] = field(default_factory=list)
    failing_runs: list[dict[str, Any]] = field(default_factory=list)
    failing_runs_total: int = 0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "generated_at": self.generated_at,
            "specs": self.specs,
            "sections": list(self.sections),
            "tasks": [t.to_dict() for t in self.tasks],
        }
        if "history" in self.sections:
            data["history_bucket"] = self.history_bucket
            data["history"] = self.history
        if "latency" in self.sections:
            data["tool_latency"] = self.tool_latency
        if "failing" in self.sections:
            data["failing_runs_total"] = self.failing_runs_total
            data["failing_runs"] = self.failing_runs
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        return cls(
            tasks=[TaskResult(**t) for t in data["tasks"]],
            specs=list(data.get("specs", [])),
            generated_at=str(data.get("generated_at", "")),
            sections=tuple(data.get("sections", ())),
            history_bucket=data.get("history_bucket"),
            history=list(data.get("history", [])),
            tool_latency=list(data.get("tool_latency", [])),
            failing_runs=list(data.get("failing_runs", [])),
            failing_runs_total=int(data.get("failing_runs_total", 0)),
        )


def _iso(moment: datetime) -> str:
    return moment.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def _epoch(moment: datetime) -> float:
    return moment.replace(tzinfo=UTC).timestamp()


def _tables(connection: duckdb.DuckDBPyConnection) -> set[str]:
    rows = connection.execute("SELECT table_name FROM information_schema.tables").fetchall()
    return {r[0] for r in rows}


def _bucket_start(seconds: float, size: int) -> int:
    if size == BUCKETS["week"]:
        return math.floor((seconds - _MONDAY) / size) * size + _MONDAY
    return math.floor(seconds / size) * size


def choose_bucket(times: Sequence[float]) -> str:
    """The finest bucket in which no history is longer than MAX_HISTORY_BUCKETS."""
    if not times:
        return "day"
    first, last = min(times), max(times)
    for name, size in BUCKETS.items():
        if _bucket_start(last, size) - _bucket_start(first, size) < MAX_HISTORY_BUCKETS * size:
            return name
    return "week"


def pass_rate_history(
    connection: duckdb.DuckDBPyConnection,
    specs: Sequence[str],
    *,
    task: str | None = None,
    bucket: str = "auto",
    run_ids: Collection[str] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """Per spec and time bucket: scored, passed and errored runs (latest stored verdict of each run;
    only of `run_ids` when given: the runs a window chose)."""
    if bucket != "auto" and bucket not in BUCKETS:
        raise ReportError(f"unknown history bucket {bucket!r}: expected auto, {', '.join(BUCKETS)}")
    if "verdicts" not in _tables(connection):
        return (bucket if bucket != "auto" else "day"), []
    task_filter = " AND task_id = ?" if task is not None else ""
    run_filter = " AND run_id IN (SELECT unnest(?::VARCHAR[]))" if run_ids is not None else ""
    rows = connection.execute(
        "WITH latest AS (SELECT run_id, spec, label, scored_at FROM verdicts "
        f"WHERE spec IN (SELECT unnest(?::VARCHAR[])){task_filter}{run_filter} "
        "QUALIFY row_number() OVER "
        "(PARTITION BY run_id, spec ORDER BY run_version DESC, scored_at DESC) = 1) "
        "SELECT latest.spec, coalesce(runs.completed_at, latest.scored_at), latest.label "
        "FROM latest LEFT JOIN runs USING (run_id)",
        [
            list(specs),
            *([task] if task is not None else []),
            *([sorted(run_ids)] if run_ids is not None else []),
        ],
    ).fetchall()
    times = [_epoch(at) for _, at, _ in rows]
    chosen = choose_bucket(times) if bucket == "auto" else bucket
    size = BUCKETS[chosen]
    counts: dict[tuple[str, int], dict[str, int]] = {}
    for (spec, _, label), seconds in zip(rows, times, strict=True):
        cell = counts.setdefault((spec, _bucket_start(seconds, size)), {"pass": 0, "fail": 0, "error": 0})
        cell[label] = cell.get(label, 0) + 1
    order = {name: i for i, name in enumerate(specs)}
    points = []
    for (spec, start), cell in sorted(counts.items(), key=lambda item: (order.get(item[0][0], 0), item[0])):
        scored = cell["pass"] + cell["fail"]
        points.append(
            {
                "spec": spec,
                "start": _iso(datetime.fromtimestamp(start, UTC)),
                "end": _iso(datetime.fromtimestamp(start + size, UTC)),
                "n_scored": scored,
                "n_passed": cell["pass"],
                "n_errors": cell["error"],
                "pass_rate": cell["pass"] / scored if scored else None,
            }
        )
    return chosen, points


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def histogram(durations: Sequence[float], bins: int = HISTOGRAM_BINS) -> dict[str, Any]:
    """Counts over `bins` equal bins: logarithmic when the durations span more than 20x, else linear."""
    low, high = min(durations), max(durations)
    if high <= low:
        return {"scale": "linear", "edges_ms": [_round(low), _round(high)], "counts": [len(durations)]}
    log = low > 0 and high / low > 20
    if log:
        a, b = math.log10(low), math.log10(high)
        edges = [_round(10 ** (a + (b - a) * i / bins)) for i in range(bins + 1)]
    else:
        edges = [_round(low + (high - low) * i / bins) for i in range(bins + 1)]
    edges[0], edges[-1] = min(edges[0], low), max(edges[-1], high)
    counts = [0] * bins
    for d in durations:
        index = bins - 1
        for i in range(bins):  # bins are few: a linear scan keeps the edge rule obvious
            if d < edges[i + 1]:
                index = i
                break
        counts[index] += 1
    return {"scale": "log" if log else "linear", "edges_ms": edges, "counts": counts}


def tool_latency(connection: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Per tool: clean execution durations in these runs, summarised."""
    if not run_ids:
        return []
    rows = connection.execute(
        "SELECT e.tool_name, "
        "list(e.duration_ms ORDER BY e.duration_ms) FILTER (WHERE NOT e.error AND NOT e.paused "
        "AND NOT e.from_history AND e.duration_ms IS NOT NULL), "
        "count(*) FILTER (WHERE e.error) "
        "FROM (SELECT unnest(?::VARCHAR[]) AS wanted) w JOIN executions e ON e.run_id = w.wanted "
        "WHERE coalesce(e.tool_name, '') <> '' GROUP BY e.tool_name ORDER BY e.tool_name",
        [list(run_ids)],
    ).fetchall()
    out = []
    for tool, stored, errored in rows:
        durations = [float(d) for d in stored or []]
        if not durations:
            out.append({"tool": tool, "n": 0, "n_errored": int(errored)})
            continue
        out.append(
            {
                "tool": tool,
                "n": len(durations),
                "n_errored": int(errored),
                "min_ms": durations[0],
                "p50_ms": nearest_rank(durations, 50),
                "p95_ms": nearest_rank(durations, 95),
                "p99_ms": nearest_rank(durations, 99),
                "max_ms": durations[-1],
                "mean_ms": sum(durations) / len(durations),
                "histogram": histogram(durations),
            }
        )
    return out


def task_latency(
    connection: duckdb.DuckDBPyConnection, tasks: Sequence[TaskResult], verdicts: Sequence[Verdict]
) -> list[TaskResult]:
    """Each task result with `execution_latency`: the clean execution durations of its runs (any tool),
    summarised as the spec's percentile bounds are (nearest rank)."""
    groups = {(t.task, t.spec): i for i, t in enumerate(tasks)}
    pairs = sorted({(v.run_id, groups[(v.task, v.spec)]) for v in verdicts if (v.task, v.spec) in groups})
    rows = connection.execute(
        "SELECT w.grp, list(e.duration_ms ORDER BY e.duration_ms) "
        "FROM (SELECT unnest(?::VARCHAR[]) AS wanted, unnest(?::INTEGER[]) AS grp) w "
        "JOIN executions e ON e.run_id = w.wanted "
        "WHERE NOT e.error AND NOT e.paused AND NOT e.from_history AND e.duration_ms IS NOT NULL "
        "AND coalesce(e.tool_name, '') <> '' GROUP BY w.grp",
        [[run for run, _ in pairs], [grp for _, grp in pairs]],
    ).fetchall()
    durations = {int(grp): [float(d) for d in stored] for grp, stored in rows}
    out = []
    for i, result in enumerate(tasks):
        timed = durations.get(i, [])
        summary: dict[str, Any] = {"n": len(timed)}
        if timed:
            summary.update({f"p{p}_ms": nearest_rank(timed, p) for p in (50, 95, 99)})
        out.append(replace(result, execution_latency=summary))
    return out


def failing_runs(
    connection: duckdb.DuckDBPyConnection, verdicts: Sequence[Verdict], limit: int = MAX_FAILING_RUNS
) -> tuple[int, list[dict[str, Any]]]:
    """The `fail` and `error` verdicts, the most recently completed run first; at most `limit`."""
    failing = [v for v in verdicts if v.label != "pass"]
    completed: dict[str, datetime] = {}
    if failing:
        rows = connection.execute(
            "SELECT r.run_id, r.completed_at FROM (SELECT unnest(?::VARCHAR[]) AS wanted) w "
            "JOIN runs r ON r.run_id = w.wanted",
            [sorted({v.run_id for v in failing})],
        ).fetchall()
        completed = {run_id: at for run_id, at in rows if at is not None}
    never = datetime.min

    def key(v: Verdict) -> tuple[datetime, str, str]:
        return (completed.get(v.run_id, never), v.run_id, v.spec)

    ordered = sorted(failing, key=key, reverse=True)[:limit]
    executions = (
        run_executions(connection, [v.run_id for v in ordered]) if "executions" in _tables(connection) else {}
    )
    return len(failing), [
        {
            "run_id": v.run_id,
            "trace_id": v.trace_id,
            "task": v.task,
            "spec": v.spec,
            "label": v.label,
            "value": v.value,
            "reason": v.reason,
            "run_version": v.run_version,
            "completed_at": _iso(completed[v.run_id]) if v.run_id in completed else None,
            "failed_checks": failed_checks(v),
            "executions_total": executions.get(v.run_id, (0, []))[0],
            "executions": executions.get(v.run_id, (0, []))[1],
        }
        for v in ordered
    ]


def build_report(
    connection: duckdb.DuckDBPyConnection,
    specs: Sequence[Spec],
    verdicts: Sequence[Verdict],
    *,
    task: str | None = None,
    k: int | None = None,
    include: Iterable[str] = SECTIONS,
    history_bucket: str = "auto",
    windowed: bool = False,
) -> Report:
    """The report over `verdicts` (the runs just scored against `specs`) and the stored tables; when
    `windowed` (the runs were chosen by a window, scoring/spec/window.py), the pass-rate history keeps
    to the runs scored, as every other section does."""
    chosen = sections(include)
    tasks = aggregate(verdicts, k=k)
    if "executions" in _tables(connection):
        tasks = task_latency(connection, tasks, verdicts)
    report = Report(
        tasks=tasks,
        specs=[{"name": s.name, "fingerprint": s.fingerprint} for s in specs],
        generated_at=_iso(datetime.now(UTC)),
        sections=chosen,
    )
    if "history" in chosen:
        report.history_bucket, report.history = pass_rate_history(
            connection,
            [s.name for s in specs],
            task=task,
            bucket=history_bucket,
            run_ids={v.run_id for v in verdicts} if windowed else None,
        )
    if "latency" in chosen:
        report.tool_latency = tool_latency(connection, sorted({v.run_id for v in verdicts}))
    if "failing" in chosen:
        report.failing_runs_total, report.failing_runs = failing_runs(connection, verdicts)
    return report

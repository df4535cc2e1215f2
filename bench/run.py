"""The benchmark suite: `make bench` (or `.venv/bin/python -m bench.run`); `BENCH_QUICK=1` (or
`--quick`) for a smoke run of a few minutes with short durations and small sizes.

Measures every figure of issues 17's and 32's targets as the target states it, in one run on this
machine:

- the components profile (bench/components.py) and the limit (bench/limit.py);
- `tracescore serve` with its default settings over real OTLP/gRPC: the acknowledged = committed rate
  at full speed and the peak RSS over it, then half that rate offered for 5 minutes (ack latency,
  checkpoints included);
- verdict lag with online scoring on, 5,000 tool spans/s offered for 5 minutes (grace 0.5 s), and
  short runs at lower rates for context;
- the longest commit during a checkpoint, from the server's /metrics over the sustained runs;
- memory (bench/budget.py): an idle server's RSS with its children, default settings; 1,000 tool
  spans/s for 5 minutes under the documented smallest `--memory-limit` and 5,000 under 512MB, each
  judged by exporters giving up, spans acknowledged against stored, the server's exit and DuckDB's
  invalidation, with peak RSS, refusals and verdict lag to explain a miss;
- Arize Phoenix on the same workload, when installed (`make bench` puts it into $PHOENIX_VENV);
- batch scoring over ~1 M stored executions (bench/score_batch.py), 1,000 specs against 1 on the same
  runs (bench/score_specs.py), one run against growing histories (bench/score_history.py);
- scoring from ClickHouse (chDB in process, bench/score_clickhouse.py), runs/s.

Ends with the targets table (bench/targets.py): figure, target, measured, met?; writes it with every
detail to bench/results/targets.json and bench/results/details.json (bench/results/quick/ for quick
runs). `--steps` runs some steps only; the table says "not measured" for the others.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import budget, components, limit, phoenix, score_batch, score_history, score_specs, targets
from bench.memory import _KIB, _status_kib
from bench.plan import FULL, QUICK, STEPS, Plan
from bench.servers import ROOT, Tracescore, loadgen
from bench.workload import SPEC, SUSTAINED_BASE_TRACES, TOOL_SPANS_SHARE, build

QUICK_ENV = "BENCH_QUICK"


@dataclass
class Results:
    """Every figure of the run, by step, and how long each step took."""

    plan: Plan
    steps: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def run(self, step: str, work: Callable[[], Any]) -> None:
        if step not in self.plan.steps:
            return
        print(f"\n== {step}", flush=True)
        started = time.monotonic()
        self.steps[step] = work()
        self.seconds[step] = round(time.monotonic() - started, 1)
        print(f"   ({self.seconds[step]:.0f} s)", flush=True)


def _ms(value: float | None) -> str:
    return "unknown (never came)" if value is None else f"{value:,.0f} ms"


def bench_components(plan: Plan) -> dict[str, float]:
    figures = components.measure(plan.components_traces)
    print(components.report(figures), flush=True)
    return figures


def bench_limit(plan: Plan) -> dict[str, float]:
    workload = build(plan.traces, seed=1)
    # Best of three: one pass takes about a second, so one busy moment on the machine would set it.
    result = max((limit.measure(workload.requests) for _ in range(3)), key=lambda r: r["spans_per_s"])
    print(
        "limit (parse + execution columns + one Arrow insert and commit): "
        f"{result['spans_per_s']:,.0f} spans/s"
    )
    return result


def bench_ingest(plan: Plan) -> dict[str, Any]:
    """Default settings: full rate (unpaced) then half of it for `sustained_s`, in one server."""
    with tempfile.TemporaryDirectory() as tmp, Tracescore(Path(tmp), []) as server:
        grpc = ["--grpc", f"127.0.0.1:{server.grpc}"]
        full = loadgen(
            [*grpc, "--concurrency", str(plan.concurrency), "--traces", str(plan.traces), "--seed", "1"]
        )
        full_rss = server.peak_rss_mb()
        full_server_rss = _status_kib(server.process.pid, "VmHWM") / _KIB
        before = server.checkpoints()
        print(
            f"full rate: {full['spans_per_s']:,.0f} spans/s acknowledged = committed, "
            f"ack p99 {_ms(full['ack_ms']['p99'])}, peak RSS {full_rss:,.0f} MB",
            flush=True,
        )
        half_rate = full["spans_per_s"] / 2
        paced = ["--spans-per-second", f"{half_rate:.0f}", "--seconds", str(plan.sustained_s)]
        half = loadgen(
            [
                *grpc,
                *paced,
                "--concurrency",
                str(plan.paced_concurrency),
                "--traces",
                str(SUSTAINED_BASE_TRACES),
                "--seed",
                "2",
            ],
            timeout_s=3 * plan.sustained_s + 600,
        )
        after = server.checkpoints()
        rss = server.stop()
        stored = server.count("spans")
    checkpoints = (after["checkpoints"] or 0) - (before["checkpoints"] or 0)
    print(
        f"half rate over {plan.sustained_s:.0f} s: {half['sent_spans_per_s']:,.0f} of {half_rate:,.0f} "
        f"spans/s, ack p50 {_ms(half['ack_ms']['p50'])}, p99 {_ms(half['ack_ms']['p99'])}, "
        f"checkpoints: {checkpoints:.0f}",
        flush=True,
    )
    return {
        "full": full,
        "full_peak_rss_mb": full_rss,
        "full_peak_server_rss_mb": full_server_rss,
        "half_rate_offered": half_rate,
        "half": half,
        "half_checkpoints": checkpoints,
        "half_checkpoint_seconds": (after["checkpoint_seconds"] or 0) - (before["checkpoint_seconds"] or 0),
        "longest_commit_during_checkpoint_ms": after["longest_commit_during_checkpoint_ms"],
        "peak_rss_mb_after_half": rss,
        "spans_sent": full["spans"] + half["spans"],
        "spans_stored": stored,
    }


def verdict_lag(plan: Plan, tool_spans_per_s: float, seconds: float) -> dict[str, Any]:
    """Verdict lag at `tool_spans_per_s` offered for `seconds`, with the server's own split of it."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(SPEC)
        with Tracescore(Path(tmp), ["--grace-seconds", str(plan.grace_s), "--specs", str(spec)]) as server:
            paced = [
                "--spans-per-second",
                f"{tool_spans_per_s / TOOL_SPANS_SHARE:.0f}",
                "--seconds",
                str(seconds),
            ]
            result = loadgen(
                [
                    "--grpc",
                    f"127.0.0.1:{server.grpc}",
                    *paced,
                    "--traces",
                    str(SUSTAINED_BASE_TRACES),
                    "--concurrency",
                    str(plan.paced_concurrency),
                    "--watch",
                    f"http://127.0.0.1:{server.http}/api/v1/verdicts/watch",
                    "--watch-wait",
                    str(plan.watch_wait_s),
                    "--seed",
                    "3",
                ],
                timeout_s=3 * seconds + 600,
            )
            checkpoints = server.checkpoints()
            split = server.verdict_lag_split()
            rss = server.stop()
    result.update(checkpoints)
    result.update(split)
    achieved = result["sent_spans_per_s"] * TOOL_SPANS_SHARE
    lag, from_ack = result["verdict_lag_ms"], result["verdict_lag_from_ack_ms"]
    print(
        f"verdict lag over {seconds:.0f} s, {achieved:,.0f} of {tool_spans_per_s:,.0f} tool spans/s: "
        f"p50 {_ms(lag['p50'])}, p99 {_ms(lag['p99'])} from sending (from the ack: p50 "
        f"{_ms(from_ack['p50'])}, p99 {_ms(from_ack['p99'])}); {result['verdicts']:,} of {result['runs']:,} "
        f"verdicts seen; checkpoints: {checkpoints['checkpoints']:.0f}",
        flush=True,
    )
    return {
        "tool_spans_per_s_offered": tool_spans_per_s,
        "tool_spans_per_s_achieved": achieved,
        "seconds": seconds,
        "grace_s": plan.grace_s,
        "exporters": plan.paced_concurrency,
        "peak_rss_mb": rss,
        **result,
    }


def bench_lag(plan: Plan) -> dict[str, Any]:
    context = [verdict_lag(plan, rate, plan.context_lag_s) for rate in plan.context_lag_rates]
    return {"target": verdict_lag(plan, plan.lag_tool_spans_per_s, plan.sustained_s), "context": context}


def bench_phoenix(plan: Plan, venv: Path) -> dict[str, Any] | None:
    result = phoenix.measure(plan.phoenix_traces, venv)
    if result is None:
        print(f"Arize Phoenix is not installed in {venv} (`make bench` installs it)")
    else:
        print(
            f"Arize Phoenix: {result['stored_spans_per_s']:,.0f} spans/s stored "
            f"({result['acknowledged_spans_per_s']:,.0f} acknowledged), "
            f"peak RSS {result['peak_rss_mb']:,.0f} MB"
        )
    return result


def bench_specs(plan: Plan) -> dict[str, Any]:
    result = score_specs.measure(plan.specs_runs, plan.specs)
    for row in result["results"]:
        print(f"{row['path']}: {row['ratio']:.2f}x wall, {row['cpu_ratio']:.2f}x CPU")
    return result


def bench_batch(plan: Plan) -> dict[str, Any]:
    result = score_batch.measure(plan.batch_executions)
    for row in result["results"]:
        print(f"{row['path']}: {row['executions_per_s']:,} executions/s")
    return result


def bench_clickhouse(plan: Plan) -> dict[str, Any] | None:
    """bench/score_clickhouse.py in a process of its own (its figure is per process), chDB in it."""
    if importlib.util.find_spec("chdb") is None:
        print("chDB is not installed (the test extra installs it): not measured")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "score_clickhouse.json"
        command = [
            *("-m", "bench.score_clickhouse", "--out", str(out)),
            *("--agent-traces", str(plan.clickhouse_agent_traces)),
            *("--plain-traces", str(plan.clickhouse_plain_traces)),
        ]
        subprocess.run([sys.executable, *command], cwd=ROOT, check=True)
        result: dict[str, Any] = json.loads(out.read_text())
    return result


def _achieved(rate: float, result: dict[str, Any]) -> float:
    """The rate over the whole planned run: a run whose exporters stopped on errors sent at `rate` only
    while it lasted, which is not the sustained rate the target asks for."""
    return rate * int(result["requests"]) / max(1, int(result["requests_planned"]))


def measured(results: Results) -> targets.Measured:
    """The figures the targets name, from what the steps returned."""
    steps, plan = results.steps, results.plan
    ingest, lag = steps.get("ingest"), steps.get("lag")
    commits = [s.get("longest_commit_during_checkpoint_ms") for s in (ingest, lag and lag["target"]) if s]
    known = [c for c in commits if c is not None]
    ack = lag_run = None
    if ingest:
        half = ingest["half"]
        ack = targets.Sustained(
            offered_per_s=ingest["half_rate_offered"],
            achieved_per_s=_achieved(half["sent_spans_per_s"], half),
            seconds=plan.sustained_s,
            p99_ms=half["ack_ms"]["p99"],
            checkpoints=ingest["half_checkpoints"],
        )
    if lag:
        run = lag["target"]
        lag_run = targets.Sustained(
            offered_per_s=run["tool_spans_per_s_offered"],
            achieved_per_s=_achieved(run["tool_spans_per_s_achieved"], run),
            seconds=run["seconds"],
            p99_ms=run["verdict_lag_ms"]["p99"],
            missing=run["verdict_lag_ms"]["missing"],
            checkpoints=run["checkpoints"],
            server_p99_ms=run.get("completion_to_delivered_p99_ms"),
        )
    specs = steps.get("specs")
    batch = steps.get("batch")
    phoenix_run = steps.get("phoenix")
    memory = steps.get("memory")
    clickhouse = steps.get("clickhouse")
    return targets.Measured(
        limit_spans_per_s=steps["limit"]["spans_per_s"] if "limit" in steps else None,
        ingest_spans_per_s=ingest["full"]["spans_per_s"] if ingest else None,
        phoenix_stored_spans_per_s=phoenix_run["stored_spans_per_s"] if phoenix_run else None,
        longest_commit_during_checkpoint_ms=max(known) if known else None,
        grace_s=plan.grace_s,
        verdict_lag=lag_run,
        ack_half_rate=ack,
        peak_rss_mb=ingest["full_peak_rss_mb"] if ingest else None,
        peak_rss_server_mb=ingest.get("full_peak_server_rss_mb") if ingest else None,
        batch_executions_per_s=(
            next(r["executions_per_s"] for r in batch["results"] if r["path"] == "set-based: score + store")
            if batch
            else None
        ),
        specs=plan.specs,
        # The plain list is the reference without the select index; `serve` and `score` use the others.
        specs_ratios={r["path"]: r["ratio"] for r in specs["results"] if "no index" not in r["path"]}
        if specs
        else {},
        small_budget=budget.as_target(memory["small_budget"]) if memory else None,
        full_rate_budget=budget.as_target(memory["full_rate_budget"]) if memory else None,
        idle_rss_mb=memory["idle"]["rss_mb"] if memory else None,
        idle_split_mb=memory["idle"]["split_mb"] if memory else {},
        clickhouse_runs_per_s=clickhouse["score_from_clickhouse_runs_per_s"] if clickhouse else None,
        clickhouse_runs_per_cpu_s=clickhouse.get("score_from_clickhouse_runs_per_cpu_s")
        if clickhouse
        else None,
        clickhouse_store_runs_per_s=clickhouse.get("score_and_store_from_clickhouse_runs_per_s")
        if clickhouse
        else None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get(QUICK_ENV, "") not in ("", "0"),
        help=f"short durations and small sizes, a smoke run (also: {QUICK_ENV}=1)",
    )
    parser.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {', '.join(STEPS)}")
    parser.add_argument("--sustained-seconds", type=float, help="override the sustained runs' duration")
    parser.add_argument(
        "--phoenix-venv", type=Path, default=Path(os.environ.get("PHOENIX_VENV", ROOT / ".venv-phoenix"))
    )
    parser.add_argument("--out", type=Path, help="directory for the JSON (default bench/results[/quick])")
    args = parser.parse_args()
    steps = tuple(s.strip() for s in args.steps.split(",") if s.strip())
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        parser.error(f"unknown steps {unknown}; the steps are {', '.join(STEPS)}")
    plan = replace(QUICK if args.quick else FULL, steps=steps)
    if args.sustained_seconds:
        plan = replace(plan, sustained_s=args.sustained_seconds)
    out = args.out or ROOT / "bench" / "results" / ("quick" if plan.quick else "")

    estimate = plan.estimated_s()
    kind = "QUICK run (short durations: not the targets' conditions)" if plan.quick else "full run"
    print(
        f"bench: {kind}, steps {', '.join(estimate)}; expected about {sum(estimate.values()) / 60:.0f} min "
        f"on an otherwise idle 2-core machine",
        flush=True,
    )
    results = Results(plan)
    results.run("components", lambda: bench_components(plan))
    results.run("limit", lambda: bench_limit(plan))
    results.run("ingest", lambda: bench_ingest(plan))
    results.run("lag", lambda: bench_lag(plan))
    results.run("memory", lambda: budget.measure(plan))
    results.run("phoenix", lambda: bench_phoenix(plan, args.phoenix_venv))
    results.run("history", lambda: score_history.measure(list(plan.history_sizes)))
    results.run("batch", lambda: bench_batch(plan))
    results.run("specs", lambda: bench_specs(plan))
    results.run("clickhouse", lambda: bench_clickhouse(plan))

    figures = measured(results)
    table = targets.rows(figures)
    print(f"\nTargets (issues 17 and 32){': QUICK run, not the targets conditions' if plan.quick else ''}\n")
    print(targets.render(table, plan.quick))
    total = sum(results.seconds.values())
    print(
        f"\n{total / 60:.1f} min in all ({', '.join(f'{k} {v:.0f} s' for k, v in results.seconds.items())})"
    )
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        **targets.as_json(table, figures, plan.quick),
        "plan": asdict(plan),
        "step_seconds": results.seconds,
    }
    (out / "targets.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "details.json").write_text(json.dumps(results.steps, indent=2) + "\n")
    print(f"written to {out / 'targets.json'} and {out / 'details.json'}")


if __name__ == "__main__":
    main()

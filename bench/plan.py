"""What one `make bench` run measures, and for how long: `FULL` as issues 17's and 32's targets state
them, `QUICK` for a smoke run (`BENCH_QUICK=1`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

STEPS = (
    "components",
    "limit",
    "ingest",
    "lag",
    "memory",
    "phoenix",
    "history",
    "batch",
    "specs",
    "clickhouse",
)


@dataclass(frozen=True)
class Plan:
    """Sizes and durations of one run; `FULL` measures the targets as stated."""

    quick: bool
    components_traces: int
    traces: int  # the full-rate load, 6 spans each
    concurrency: int
    # the half-rate ack run, the 5,000 tool spans/s verdict-lag run and the memory step's budget runs
    sustained_s: float
    lag_tool_spans_per_s: float
    grace_s: float
    # Exporters in the paced runs: one 512-span request in flight each, so 4 cannot offer 10 k spans/s
    # once an answer takes over 200 ms.
    paced_concurrency: int
    context_lag_rates: tuple[float, ...]  # shorter verdict-lag runs at lower rates, for context
    context_lag_s: float
    watch_wait_s: float
    phoenix_traces: int
    history_sizes: tuple[int, ...]
    batch_executions: int
    specs_runs: int
    specs: int
    clickhouse_agent_traces: int
    clickhouse_plain_traces: int
    steps: tuple[str, ...] = STEPS

    def estimated_s(self) -> dict[str, float]:
        """Rough seconds each step takes on the project's 2-core machine with nothing else running
        (checked against the step times every run prints and records)."""
        lag_runs = len(self.context_lag_rates) * (self.context_lag_s + 15)
        estimate = {
            "components": 2 + self.components_traces * 0.008,
            "limit": 3 + self.traces * 0.0006,
            "ingest": 20 + self.traces * 6 / 10_000 + self.sustained_s,
            "lag": 20 + self.sustained_s + self.watch_wait_s + lag_runs,
            # idle (10 s settle, 5 samples) and two budget runs, each waiting for its last verdicts
            "memory": 20 + 2 * (15 + self.sustained_s + min(self.watch_wait_s, 10)),
            "phoenix": 20 + self.phoenix_traces * 0.1,
            "history": 10 + sum(self.history_sizes) * 0.0001,
            "batch": 15 + self.batch_executions * 0.00012,
            "specs": 5 + self.specs_runs * 0.003,
            # ~1 M spans built in chDB, then the agent runs scored (bench/README.md: ~30-60 s wall)
            "clickhouse": 10 + self.clickhouse_agent_traces * 0.0025,
        }
        return {step: seconds for step, seconds in estimate.items() if step in self.steps}


FULL = Plan(
    quick=False,
    components_traces=3000,
    traces=20_000,
    concurrency=4,
    sustained_s=300,
    lag_tool_spans_per_s=5000,
    grace_s=0.5,
    paced_concurrency=8,
    context_lag_rates=(1000, 2500),
    context_lag_s=20,
    watch_wait_s=60,
    phoenix_traces=1000,
    history_sizes=(1000, 100_000, 1_000_000),
    batch_executions=1_000_000,
    specs_runs=15_000,
    specs=1000,
    clickhouse_agent_traces=20_000,
    clickhouse_plain_traces=220_000,
)
QUICK = replace(
    FULL,
    quick=True,
    components_traces=500,
    traces=4000,
    sustained_s=20,
    context_lag_rates=(),
    watch_wait_s=15,
    phoenix_traces=200,
    history_sizes=(1000, 10_000),
    batch_executions=60_000,
    specs_runs=3000,
    specs=200,
    clickhouse_agent_traces=2000,
    clickhouse_plain_traces=22_000,
)

"""Verdict lag alone (`python -m bench.verdict_lag`): `bench.run`'s verdict-lag runs at the given rates,
each printed with where the lag went, for comparing two versions back to back on a shared machine.

From sending the request that carries a run's last span to its verdict on the watch stream, and from
that request's acknowledgement; then, for every run, from its completion (`run_traces.completed_at`)
to its verdict on the watch stream and to its verdict stored (`verdicts.scored_at`); and from the
server's own /metrics (its most recent 2,000 runs) completion → verdict handed to watchers and export
(`tracescore_verdict_lag_seconds`, absent before it existed) and → stored.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import Any

from bench.run import bench_verdict_lag


def _p50_p99(figures: dict[str, Any], name: str) -> str:
    return f"{figures[name + '_p50_ms']:.0f} / {figures[name + '_p99_ms']:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rates", default="1000,2500,5000", help="tool spans/s offered, comma-separated")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--grace", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="print each run's figures as JSON too")
    args = parser.parse_args()
    for rate in (float(r) for r in args.rates.split(",")):
        lag = bench_verdict_lag(rate, args.seconds, grace_s=args.grace, concurrency=args.concurrency)
        ms = partial(_p50_p99, lag)
        print(
            f"offered {rate:,.0f} tool spans/s, achieved {lag['tool_spans_per_s_achieved']:,.0f}, "
            f"{lag['verdicts_seen']} / {lag['runs']} verdicts seen: lag p50 / p99 (ms) from sending "
            f"{ms('verdict_lag')}; from the ack {ms('verdict_lag_from_ack')}; completion -> watcher "
            f"{ms('completion_to_watcher')}, -> stored {ms('completion_to_store')} (all runs); the server's "
            f"recent runs: completion -> handed on {ms('completion_to_delivered')}, -> stored "
            f"{ms('completion_to_stored')}; checkpoints {lag['checkpoints']:.0f} "
            f"({lag['checkpoint_seconds']:.2f} s)",
            flush=True,
        )
        if args.json:
            print(json.dumps(lag), flush=True)


if __name__ == "__main__":
    main()

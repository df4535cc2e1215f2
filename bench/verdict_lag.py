"""Verdict lag alone (`python -m bench.verdict_lag`): `bench.run`'s verdict-lag runs at the given rates,
each printed with where the lag went, for comparing two versions back to back on a shared machine.

From sending the request that carries a run's last span to its verdict on the watch stream; split into
sending → acknowledgement (the ack), acknowledgement → completion (the grace period, mostly) and,
from the server's own /metrics (its most recent 2,000 runs), completion → verdict handed to watchers
and completion → verdict stored.
"""

from __future__ import annotations

import argparse
import json

from bench.run import bench_verdict_lag


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
        print(
            f"offered {rate:,.0f} tool spans/s, achieved {lag['tool_spans_per_s_achieved']:,.0f}, "
            f"{lag['verdicts_seen']} / {lag['runs']} verdicts seen: lag from sending p50 / p99 "
            f"{lag['verdict_lag_p50_ms']:.0f} / {lag['verdict_lag_p99_ms']:.0f} ms; from the ack "
            f"{lag['verdict_lag_from_ack_p50_ms']:.0f} / {lag['verdict_lag_from_ack_p99_ms']:.0f}; "
            f"completion -> delivered {lag['completion_to_delivered_p50_ms']:.0f} / "
            f"{lag['completion_to_delivered_p99_ms']:.0f}, -> stored {lag['completion_to_stored_p50_ms']:.0f}"
            f" / {lag['completion_to_stored_p99_ms']:.0f}; checkpoints {lag['checkpoints']:.0f} "
            f"({lag['checkpoint_seconds']:.2f} s)",
            flush=True,
        )
        if args.json:
            print(json.dumps(lag), flush=True)


if __name__ == "__main__":
    main()

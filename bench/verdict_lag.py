"""Verdict lag alone (`python -m bench.verdict_lag`): `bench.run`'s verdict-lag runs at the given rates,
each printed with where the lag went, for comparing two versions back to back on a shared machine.

From sending the request that carries a run's last span to its verdict on the watch stream, and from
that request's acknowledgement; and from the server's own /metrics (its most recent 2,000 runs):
completion → verdict handed to watchers and export (`tracescore_verdict_lag_seconds`) and → stored
(`tracescore_scoring_lag_seconds`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from bench.plan import FULL
from bench.run import verdict_lag


def _ms(value: object) -> str:
    return f"{value:.0f}" if isinstance(value, float | int) else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rates", default="1000,2500,5000", help="tool spans/s offered, comma-separated")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--grace", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="print each run's figures as JSON too")
    args = parser.parse_args()
    plan = replace(FULL, grace_s=args.grace, paced_concurrency=args.concurrency, watch_wait_s=30)
    for rate in (float(r) for r in args.rates.split(",")):
        lag = verdict_lag(plan, rate, args.seconds)
        delivered = [_ms(lag[f"completion_to_delivered_{p}_ms"]) for p in ("p50", "p99")]
        stored = [_ms(lag[f"completion_to_stored_{p}_ms"]) for p in ("p50", "p99")]
        print(
            f"  the server's recent runs, p50 / p99 ms: completion -> handed on {' / '.join(delivered)}, "
            f"-> stored {' / '.join(stored)}",
            flush=True,
        )
        if args.json:
            print(json.dumps(lag), flush=True)


if __name__ == "__main__":
    main()

"""What `serve --export-dir` costs the live path: verdict lag under load with and without it.

The same offered load (bench/loadgen.py over OTLP/gRPC, online scoring on, verdicts watched) runs
against a server without the history export and against one exporting every `--every` seconds, in
turns; the script prints verdict lag p50/p99 for each and what the export wrote (rows and files, read
back from the Parquet with DuckDB, which must equal the rows stored). The figures are in
bench/README.md.

    python -m bench.history_export [--tool-spans-per-s 1000] [--seconds 30] [--every 5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from bench.servers import Tracescore, loadgen
from bench.workload import SPEC, TOOL_SPANS_SHARE


def _run(tool_spans_per_s: float, seconds: float, every: float | None) -> dict[str, Any]:
    spans_per_s = tool_spans_per_s / TOOL_SPANS_SHARE
    traces = int(spans_per_s * seconds / 6)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(SPEC)
        out = Path(tmp) / "history"
        extra = ["--grace-seconds", "0.5", "--specs", str(spec)]
        if every is not None:
            extra += ["--export-dir", str(out), "--export-every", str(every)]
        server = Tracescore(Path(tmp), extra)
        result = loadgen(
            [
                "--grpc",
                f"127.0.0.1:{server.grpc}",
                "--traces",
                str(traces),
                "--concurrency",
                "4",
                "--spans-per-second",
                f"{spans_per_s:.0f}",
                "--watch",
                f"http://127.0.0.1:{server.http}/api/v1/verdicts/watch",
                "--seed",
                "5",
            ]
        )
        server.stop()
        stored = server.count("spans")
        exported = files = 0
        if every is not None:
            files = len(list(out.glob("otel_traces/*/*/*.parquet")))
            with duckdb.connect() as connection:
                ((exported,),) = connection.execute(
                    f"SELECT count(*) FROM read_parquet('{out}/otel_traces/*/*/*.parquet')"
                ).fetchall()
    lag = result["verdict_lag_ms"]
    return {
        "every": every,
        "achieved": result["tool_spans"] / result["elapsed_s"],
        "p50_ms": lag["p50"] if lag["p50"] is not None else float("inf"),
        "p99_ms": lag["p99"] if lag["p99"] is not None else float("inf"),
        "verdicts": result["verdicts"],
        "runs": traces,
        "stored": stored,
        "exported": exported,
        "files": files,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool-spans-per-s", type=float, default=1000)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--every", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for _ in range(args.rounds):
        for every in (None, args.every):
            r = _run(args.tool_spans_per_s, args.seconds, every)
            what = "no export" if every is None else f"--export-every {every:g}"
            print(
                f"{what:>20}: {r['achieved']:,.0f} tool spans/s, verdict lag p50 {r['p50_ms']:.0f} ms, "
                f"p99 {r['p99_ms']:.0f} ms ({r['verdicts']} verdicts / {r['runs']} runs); "
                f"spans stored {r['stored']:,}, exported {r['exported']:,} in {r['files']} files",
                flush=True,
            )


if __name__ == "__main__":
    main()

"""Peak RSS of `tracescore serve` and its decode workers under the bench's full rate (issue 17).

`python -m bench.memory` starts a real server (default settings, then with `--memory-limit` given), sends
the bench's seeded workload over OTLP/gRPC as fast as acknowledgements allow (bench/loadgen.py, the
same load as `bench.run`'s full-rate run), samples the resident memory of the server and of each of
its child processes from /proc every 0.1 s, and prints:

- the peak of the sampled sum (server + workers at the same moment), and of their proportional set
  sizes (PSS: a library's pages mapped by the server and its workers counted once, as a container's
  memory accounting counts them);
- each process's own high-water mark (`VmHWM`) and their sum (an upper bound of the above);
- the server's peak split into anonymous memory (Python objects, DuckDB's buffers, Arrow) and mapped
  files (the libraries' code, shared with the workers), from /proc/PID/smaps_rollup;
- the rate reached and the requests refused (the memory budget's retryable refusals among them).

`peak_rss(...)` returns the same figures as a dict, for `bench.run`'s summary.

`python -m bench.memory --idle` measures instead what a server given no spec holds doing nothing
(issue 33): it starts the server with its defaults, lets it settle for `--settle` seconds once its
decode workers are up, then reads the RSS and PSS of the server, of each decode worker and of
multiprocessing's resource tracker five times a second apart; `--runs` servers one after another.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.servers import Tracescore, children, loadgen

_SAMPLE_S = 0.1
_KIB = 1024


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _rollup_kib(pid: int) -> dict[str, int]:
    """Rss, Pss and Anonymous of a process, in KiB (file-backed = Rss - Anonymous)."""
    wanted = {"Rss", "Pss", "Anonymous"}
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in wanted:
            found[name] = int(rest.split()[0])
    return found


class _Sampler:
    """Samples the resident memory of a process tree until stopped; keeps the peaks."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_tree_kib = 0
        self.peak_tree_pss_kib = 0
        self.peak_server_anon_kib = 0
        self.peak_server_file_kib = 0
        self.high_water_kib: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(_SAMPLE_S):
            self._sample()

    def _sample(self) -> None:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            tree = pss = 0
            for pid in (self.pid, *children(self.pid)):
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    tree += _status_kib(pid, "VmRSS")
                    pss += _rollup_kib(pid).get("Pss", 0)
                    self.high_water_kib[pid] = max(self.high_water_kib.get(pid, 0), _status_kib(pid, "VmHWM"))
            self.peak_tree_kib = max(self.peak_tree_kib, tree)
            self.peak_tree_pss_kib = max(self.peak_tree_pss_kib, pss)
            rollup = _rollup_kib(self.pid)
            anon = rollup.get("Anonymous", 0)
            if anon > self.peak_server_anon_kib:
                self.peak_server_anon_kib = anon
                self.peak_server_file_kib = rollup.get("Rss", 0) - anon


def peak_rss(
    traces: int = 20_000,
    concurrency: int = 4,
    memory_limit: str | None = None,
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    """Peak RSS of serve (+ its workers) while it takes `traces` agent runs at full rate, in MB (MiB)."""
    args = ["--grace-seconds", "2", *extra]
    if memory_limit:
        args += ["--memory-limit", memory_limit]
    with tempfile.TemporaryDirectory() as tmp:
        server = Tracescore(Path(tmp), args)
        idle_kib = _status_kib(server.process.pid, "VmRSS")
        with _Sampler(server.process.pid) as sampler:
            sent = loadgen(
                [
                    "--grpc",
                    f"127.0.0.1:{server.grpc}",
                    "--traces",
                    str(traces),
                    "--concurrency",
                    str(concurrency),
                    "--seed",
                    "1",
                ]
            )
            time.sleep(3)  # the last runs complete (grace 2 s) while still sampled
            samples = server.metrics()
        server.stop()
        stored = server.count("spans")
    workers = {pid: kib for pid, kib in sampler.high_water_kib.items() if pid != server.process.pid}
    return {
        "memory_limit": memory_limit or "default",
        "spans_sent": sent["spans"],
        "spans_stored": stored,
        "spans_per_s": sent["spans_per_s"],
        "decode_workers": int(float(samples.get("tracescore_decode_workers", "0"))),
        "requests_refused": int(float(samples.get("tracescore_requests_refused_total", "0"))),
        "idle_server_mb": idle_kib / _KIB,
        "peak_rss_mb": sampler.peak_tree_kib / _KIB,
        "peak_pss_mb": sampler.peak_tree_pss_kib / _KIB,
        "peak_server_mb": sampler.high_water_kib.get(server.process.pid, 0) / _KIB,
        "peak_children_mb": [kib / _KIB for kib in workers.values()],
        "sum_of_high_water_marks_mb": sum(sampler.high_water_kib.values()) / _KIB,
        "server_anonymous_mb_at_peak": sampler.peak_server_anon_kib / _KIB,
        "server_file_backed_mb_at_peak": sampler.peak_server_file_kib / _KIB,
    }


def _role(pid: int) -> str:
    command = Path(f"/proc/{pid}/cmdline").read_bytes()
    if b"resource_tracker" in command:
        return "tracker"
    return "worker" if b"spawn_main" in command else "other"


def idle_rss(runs: int = 3, settle_s: float = 10.0, samples: int = 5) -> list[dict[str, Any]]:
    """RSS and PSS of an idle server with no spec and of its children, in MB (MiB), per sample."""
    found: list[dict[str, Any]] = []
    for run in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            server = Tracescore(Path(tmp), [], idle=True)
            time.sleep(settle_s)
            for _ in range(samples):
                sample: dict[str, Any] = {"run": run}
                for pid in (server.process.pid, *children(server.process.pid)):
                    role = "server" if pid == server.process.pid else _role(pid)
                    sample[f"{role}_rss_mb"] = _status_kib(pid, "VmRSS") / _KIB
                    sample[f"{role}_pss_mb"] = _rollup_kib(pid).get("Pss", 0) / _KIB
                found.append(sample)
                time.sleep(1)
            server.stop()
    return found


def _print_idle(found: list[dict[str, Any]]) -> None:
    for role in ("server", "worker", "tracker"):
        rss = sorted(s[f"{role}_rss_mb"] for s in found if f"{role}_rss_mb" in s)
        pss = sorted(s[f"{role}_pss_mb"] for s in found if f"{role}_pss_mb" in s)
        if rss:
            print(
                f"idle {role}: RSS {rss[0]:.1f}–{rss[-1]:.1f} MB (median {rss[len(rss) // 2]:.1f}), "
                f"PSS {pss[0]:.1f}–{pss[-1]:.1f} MB over {len(rss)} samples",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", type=int, default=20_000, help="agent runs sent (6 spans each)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--memory-limit",
        action="append",
        default=None,
        help="also run with this --memory-limit (repeatable; default: 256MB); 'default' for none",
    )
    parser.add_argument(
        "--serve-arg", action="append", default=[], help="another argument for serve (repeatable)"
    )
    parser.add_argument("--out", type=Path, default=None, help="default: bench/results/memory.json")
    parser.add_argument("--idle", action="store_true", help="an idle server's RSS instead (no load)")
    parser.add_argument("--runs", type=int, default=3, help="with --idle: servers started one by one")
    parser.add_argument("--settle", type=float, default=10.0, help="with --idle: seconds idle first")
    args = parser.parse_args()
    results_dir = Path(__file__).parent / "results"
    if args.idle:
        found = idle_rss(args.runs, args.settle)
        _print_idle(found)
        out = args.out or results_dir / "idle_memory.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(found, indent=2))
        return
    limits = args.memory_limit or ["default", "256MB"]
    results = []
    for limit in limits:
        result = peak_rss(
            args.traces, args.concurrency, None if limit == "default" else limit, args.serve_arg
        )
        results.append(result)
        workers = ", ".join(f"{mb:.0f}" for mb in result["peak_children_mb"])
        print(
            f"--memory-limit {result['memory_limit']}: peak RSS {result['peak_rss_mb']:.0f} MB "
            f"(PSS {result['peak_pss_mb']:.0f}) "
            f"(server {result['peak_server_mb']:.0f}: anonymous {result['server_anonymous_mb_at_peak']:.0f}, "
            f"files {result['server_file_backed_mb_at_peak']:.0f}; "
            f"{result['decode_workers']} worker(s) {workers}; "
            f"idle {result['idle_server_mb']:.0f}) at {result['spans_per_s']:,.0f} spans/s, "
            f"{result['spans_stored']:,} of {result['spans_sent']:,} stored, "
            f"{result['requests_refused']} refusals",
            flush=True,
        )
    out = args.out or results_dir / "memory.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

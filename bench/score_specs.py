"""Scoring cost against the number of specs (issue 17: "1,000 specs vs 1 spec, same runs ≤ 2x").

One stored history of ~15 k runs (bench/history.py, `varied`, 1,000 tasks) is judged by one spec that
selects every run, then by 1,000 specs that each select one task: the same runs, the same number of
verdicts, the same checks. Three ways:

- `score_records` (what `tracescore score` uses) with the bench spec, which set-based SQL judges;
- `score_records` with the bench spec plus a `calls` check, which only the Python judge takes (the
  issue's case: a differential run of 15,782 runs x 1,001 argument-rule specs took 29 s);
- online scoring's step for the runs' evidence already in memory (`score_evidence` with a `SpecSet`, as
  the server's spec source holds it), and the same with a plain list of specs (every spec's `select`
  tested against every run, as before the index).

Prints wall and CPU seconds (best of `--repeat`) and the 1,000-specs / 1-spec ratios of each; writes
bench/results/score_specs.json.

    .venv/bin/python -m bench.score_specs [--runs 15000] [--specs 1000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from bench.history import SPEC, build
from scoring import Spec, score_evidence
from scoring.batch.score import score_records
from scoring.evidence.runs import Evidence, complete_runs, load_evidence

try:  # absent before the index (e72e60d): the script measures that code too, for the figures before
    from scoring import SpecSet
except ImportError:  # pragma: no cover
    SpecSet = None  # type: ignore[assignment,misc]

_PYTHON_ONLY = {"calls": {"quote": {"max": 2}}}  # outside the compiled subset: the Python judge


def _specs(base: dict[str, Any], count: int) -> list[Spec]:
    if count == 1:
        return [Spec.model_validate({**base, "name": "all-tasks"})]
    return [
        Spec.model_validate({**base, "name": f"task-{i}", "select": {"task": f"task-{i}"}})
        for i in range(count)
    ]


def _best(work: Callable[[], int], repeat: int) -> tuple[float, float, int]:
    """The best wall and CPU seconds of `repeat` runs (CPU: of this process, DuckDB's threads included;
    on a shared machine wall time mostly measures the others), and what the work counted."""
    best, best_cpu, count = float("inf"), float("inf"), 0
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        count = work()
        best = min(best, time.perf_counter() - started)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best, best_cpu, count


def _online(evidence: list[Evidence], specs: Sequence[Spec] | Any) -> int:
    return sum(len(score_evidence(specs, e)) for e in evidence)


def measure(runs: int = 15_000, many: int = 1_000, repeat: int = 2) -> dict[str, Any]:
    base = SPEC.model_dump(mode="json", exclude_none=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.duckdb"
        build(path, runs, varied=True, tasks=many)
        connection = duckdb.connect(str(path), read_only=True)
        evidence = load_evidence(connection, complete_runs(connection))
        ways: list[tuple[str, dict[str, Any], Callable[[list[Spec]], int]]] = [
            ("tracescore score path, SQL spec", base, lambda s: sum(1 for _ in score_records(connection, s))),
            (
                "tracescore score path, Python-judged spec",
                {**base, **_PYTHON_ONLY},
                lambda s: sum(1 for _ in score_records(connection, s)),
            ),
            ("online scoring step, plain list (no index)", base, lambda s: _online(evidence, s)),
        ]
        if SpecSet is not None:
            indexed = (
                "online scoring step, specs indexed (SpecSet)",
                base,
                lambda s: _online(evidence, SpecSet(s)),
            )
            ways.insert(2, indexed)
        for label, spec, work in ways:
            one, one_cpu, verdicts_one = _best(lambda: work(_specs(spec, 1)), repeat)  # noqa: B023
            specs = _specs(spec, many)
            lots, lots_cpu, verdicts_many = _best(lambda: work(specs), repeat)  # noqa: B023
            if verdicts_one != verdicts_many:
                raise RuntimeError(
                    f"{label}: {verdicts_one} verdicts from 1 spec, {verdicts_many} from {many}"
                )
            rows.append(
                {
                    "path": label,
                    "verdicts": verdicts_one,
                    "one_spec_s": round(one, 3),
                    "many_specs_s": round(lots, 3),
                    "ratio": round(lots / one, 2),
                    "one_spec_cpu_s": round(one_cpu, 3),
                    "many_specs_cpu_s": round(lots_cpu, 3),
                    "cpu_ratio": round(lots_cpu / one_cpu, 2),
                }
            )
        connection.close()
    return {"runs": runs, "specs": many, "results": rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15_000)
    parser.add_argument("--specs", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/score_specs.json"))
    args = parser.parse_args()
    result = measure(args.runs, args.specs, args.repeat)
    many = f"{result['specs']:,} specs selecting one task each"
    print(f"{result['runs']:,} runs: 1 spec selecting every run vs {many}")
    header = f"{'1 spec s':>9} {f'{args.specs} specs s':>12} {'ratio':>7} {'CPU s':>13} {'CPU ratio':>9}"
    print(f"{'path':<46} {'verdicts':>9} {header}")
    for row in result["results"]:
        cpu = f"{row['one_spec_cpu_s']:.2f} / {row['many_specs_cpu_s']:.2f}"
        print(
            f"{row['path']:<46} {row['verdicts']:>9,} {row['one_spec_s']:>9.2f} "
            f"{row['many_specs_s']:>12.2f} {row['ratio']:>6.2f}x {cpu:>13} {row['cpu_ratio']:>8.2f}x"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()

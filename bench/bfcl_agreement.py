"""BFCL's own AST checker and tracescore's `normalize: bfcl` side by side, on BFCL's own data.

For every entry of BFCL's simple (Python), multiple, parallel and parallel_multiple sets (the question
and possible_answer files shipped in the `bfcl-eval` package), candidate outputs are generated (the
answer, each allowed alternative, wrong values, type changes, dropped and extra parameters, string
look-alikes, int/float, reordered, missing and extra calls: bench/_bfcl_candidates.py). BFCL's checker
judges them in BFCL's own venv (bench/_bfcl_runner.py, a subprocess); tracescore judges them in
process, through `scoring.judge` with a spec translated from the possible answer, as a user's spec
would be. Prints the agreement per category and every disagreement, classified.

    python3 -m venv .venv-bfcl && .venv-bfcl/bin/pip install bfcl-eval
    .venv/bin/python -m bench.bfcl_agreement --bfcl-python .venv-bfcl/bin/python

Not part of `make test`: it needs BFCL's package.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench._bfcl_candidates import Call, candidates
from scoring import Evidence, Execution, Run, Spec, judge

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")
_RUNNER = Path(__file__).with_name("_bfcl_runner.py")
_TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list}
_TYPES |= {"dict": dict, "any": str}


def _expand_object(answer: Any) -> list[Any]:
    """A BFCL object answer (`{key: [acceptable values]}`) written out as the objects it accepts; a key
    whose values hold `""` may also be left out. A `""` answer stays (the parameter may be omitted)."""
    if not isinstance(answer, dict):
        return [answer]
    options = []
    for key, acceptable in answer.items():
        choices: list[Any] = [(key, v) for v in acceptable]
        if "" in acceptable:
            choices.append(None)
        options.append(choices)
    return [dict(pair for pair in combo if pair is not None) for combo in itertools.product(*options)]


def _acceptable(values: list[Any], declared: dict[str, Any] | None) -> list[Any]:
    kind = (declared or {}).get("type")
    if kind == "dict":
        return [obj for v in values for obj in _expand_object(v)]
    if kind in ("array", "tuple") and (declared or {}).get("items", {}).get("type") == "dict":
        return [
            list(combo) if isinstance(v, list) else v
            for v in values
            for combo in (itertools.product(*map(_expand_object, v)) if isinstance(v, list) else [v])
        ]
    return list(values)


def declared_type(prop: dict[str, Any] | None) -> str | None:
    """BFCL's declared type of a parameter as a rule's `type`: `float`, `array[integer]`."""
    if prop is None:
        return None
    kind = str(prop["type"])
    item = prop.get("items", {}).get("type")
    return f"{kind}[{item}]" if kind in ("array", "tuple") and item else kind


def rules(truth: Call, doc: dict[str, Any], bfcl: bool = True) -> dict[str, Any]:
    """One ground-truth call as tracescore argument rules (`mode: exact`: BFCL refuses parameters its
    answer does not name). `bfcl=False`: the same answer as a spec in tracescore's own terms
    (`optional: true` for `""`, `normalize: true`), to show where the modes differ."""
    (_, params), *_ = truth.items()
    declared, required = doc["parameters"]["properties"], doc["parameters"].get("required", [])
    values: dict[str, Any] = {}
    for param, acceptable in params.items():
        values_given = _acceptable(acceptable, declared.get(param))
        if not bfcl:
            values_given = [v for v in values_given if v != ""]
        if (param not in declared and "" in acceptable) or not values_given:
            continue  # only leaving it out is right: exact mode refuses it once it is not listed
        rule: dict[str, Any] = {"any_of": values_given}
        if bfcl and (kind := declared_type(declared.get(param))) is not None:
            rule["type"] = kind
        if bfcl and param in required and "" in acceptable:
            rule["optional"] = False  # BFCL requires what the function requires, `""` or not
        if not bfcl:
            rule["normalize"] = True
            if "" in acceptable and param not in required:
                rule["optional"] = True
        values[param] = rule
    return values


def spec_for(
    category: str, entry_id: str, functions: list[Any], truth: list[Call], bfcl: bool = True
) -> Spec:
    docs = {f["name"]: f for f in functions}
    data: dict[str, Any] = {"name": entry_id, "allow_additional": False}
    if bfcl:
        data["normalize"] = "bfcl"
    if "parallel" in category:
        tools = [
            {"tool": name, "mode": "exact", "values": rules(call, docs[name], bfcl)}
            for call in truth
            for name in call
        ]
        data["trajectory"] = {"mode": "unordered", "tools": tools}
    else:
        (name, _), *_ = truth[0].items()
        data["calls"] = {name: {"exactly": 1}}
        data["argument_rules"] = {name: {"mode": "exact", "values": rules(truth[0], docs[name], bfcl)}}
    return Spec.model_validate(data)


def tracescore_passes(spec: Spec, output: list[Call]) -> bool | None:
    """Whether tracescore's judge passes `output` (None: it could not decide, which never agrees
    with BFCL's yes or no)."""
    executions = tuple(
        Execution(
            span_id=f"{i:016x}",
            tool_name=name,
            arguments=json.loads(json.dumps(args)),  # as stored: JSON text, read back
            arguments_valid=True,
            error=False,
            paused=False,
            from_history=False,
            duration_ms=1.0,
            agent_path=None,
            call_id=None,
            start_ns=i + 1,
            end_ns=i + 2,
        )
        for i, call in enumerate(output)
        for name, args in call.items()
    )
    run = Run("run", "trace", None, None, None, None, 1, {})
    return judge(spec, Evidence(run, executions, ())).passed


def _bfcl_data(python: str) -> Path:
    code = "import bfcl_eval, pathlib; print(pathlib.Path(bfcl_eval.__file__).parent / 'data')"
    return Path(
        subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    )


def _entries(data: Path, category: str) -> list[tuple[str, list[Any], list[Call]]]:
    questions = {}
    for line in (data / f"BFCL_v4_{category}.json").read_text().splitlines():
        entry = json.loads(line)
        questions[entry["id"]] = entry["function"]
    found = []
    for line in (data / "possible_answer" / f"BFCL_v4_{category}.json").read_text().splitlines():
        entry = json.loads(line)
        found.append((entry["id"], questions[entry["id"]], entry["ground_truth"]))
    return found


def classify(bfcl: dict[str, Any], ours: bool) -> str:
    if not bfcl["valid"] and ours and bfcl.get("pairing_exists"):
        return "BFCL first-fit false negative (a one-to-one pairing exists; tracescore finds it)"
    return "unexplained"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--bfcl-python",
        default=os.environ.get("TRACESCORE_BFCL_PYTHON", ".venv-bfcl/bin/python"),
        help="the Python of a venv with bfcl-eval installed (env TRACESCORE_BFCL_PYTHON)",
    )
    parser.add_argument("--show", type=int, default=25, help="kinds of normalize: true divergence printed")
    args = parser.parse_args()
    data = _bfcl_data(args.bfcl_python)
    rows: list[tuple[str, str, str, str | None, list[Call], bool | None, bool | None]] = []
    for category in CATEGORIES:
        for entry_id, functions, truth in _entries(data, category):
            spec = spec_for(category, entry_id, functions, truth)
            own = spec_for(category, entry_id, functions, truth, bfcl=False)
            for label, touched, output in candidates(category, functions, truth):
                ours, default = tracescore_passes(spec, output), tracescore_passes(own, output)
                rows.append((category, entry_id, label, touched, output, ours, default))
    feed = "".join(json.dumps({"category": r[0], "id": r[1], "output": r[4]}) + "\n" for r in rows)
    done = subprocess.run(
        [args.bfcl_python, str(_RUNNER)], input=feed, capture_output=True, text=True, check=True
    )
    verdicts = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(verdicts) != len(rows):
        sys.exit(f"BFCL's runner answered {len(verdicts)} of {len(rows)} candidates: {done.stderr[-2000:]}")
    _report(rows, verdicts, args.show)


def _report(rows: list[Any], verdicts: list[dict[str, Any]], show: int) -> None:
    per: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    kinds: dict[str, list[str]] = collections.defaultdict(list)
    default_differs: collections.Counter[str] = collections.Counter()
    for (category, entry_id, label, touched, output, ours, default), bfcl in zip(rows, verdicts, strict=True):
        counts = per[category]
        counts["candidates"] += 1
        counts["bfcl valid"] += bfcl["valid"]
        counts["tracescore valid"] += ours
        counts["default agree"] += bfcl["valid"] == default
        if bfcl["valid"] != default:
            default_differs[f"{label} ({'BFCL' if bfcl['valid'] else 'tracescore'} passes)"] += 1
        if bfcl["valid"] == ours:
            counts["agree"] += 1
            continue
        kind = classify(bfcl, ours)
        side = "tracescore passes, BFCL fails" if ours else "BFCL passes, tracescore fails"
        kinds[kind].append(
            f"{entry_id} [{label}{f' {touched}' if touched else ''}] {side} ({bfcl['error_type']}): "
            f"{json.dumps(output, ensure_ascii=False)[:200]}"
        )
    total: collections.Counter[str] = collections.Counter()
    header = ("category", "candidates", "BFCL valid", "bfcl-mode valid", "agree", "differ", "default agree")
    print("{:<18} {:>10} {:>10} {:>15} {:>7} {:>6} {:>13}".format(*header))
    for category in (*CATEGORIES, "total"):
        c = total if category == "total" else per[category]
        if category != "total":
            total.update(c)
        print(
            f"{category:<18} {c['candidates']:>10} {c['bfcl valid']:>10} {c['tracescore valid']:>15} "
            f"{c['agree']:>7} {c['candidates'] - c['agree']:>6} {c['default agree']:>13}"
        )
    print(
        f"agreement, normalize: bfcl: {total['agree'] / total['candidates']:.4%}; "
        f"tracescore's own normalize: true: {total['default agree'] / total['candidates']:.4%}"
    )
    for kind, examples in sorted(kinds.items()):
        print(f"\nnormalize: bfcl differs from BFCL, {kind}: {len(examples)}")
        for line in examples:
            print(f"  {line}")
    print(f"\nnormalize: true differs from BFCL, by candidate kind (top {show}):")
    for label, count in default_differs.most_common(show):
        print(f"  {count:>6}  {label}")


if __name__ == "__main__":
    main()

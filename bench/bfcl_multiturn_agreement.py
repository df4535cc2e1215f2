"""BFCL's own multi-turn checker and tracescore's `multi_turn: bfcl` side by side, on BFCL's own data.

For entries of BFCL's multi_turn_base, multi_turn_miss_func, multi_turn_miss_param and
multi_turn_long_context sets, candidate conversations are generated from the ground truth (the truth
itself, dropped, duplicated, swapped, moved and changed calls, emptied and merged turns). BFCL's
`multi_turn_checker` judges them in BFCL's own venv (bench/_bfcl_multiturn_runner.py, a subprocess),
which also reports each call's execution result and each turn's environment state, as a harness would
put them in its traces. tracescore judges the same conversation in process, through
`scoring.judge.conversation` with a spec written from the ground truth only (docs/checks.md, "BFCL
multi-turn mode"): `- unchecked` for an empty ground-truth turn, else the state after it and one
`text` result rule per ground-truth call. Prints the agreement per category and each disagreement.

    python3 -m venv .venv-bfcl && .venv-bfcl/bin/pip install bfcl-eval
    .venv/bin/python -m bench.bfcl_multiturn_agreement --bfcl-python .venv-bfcl/bin/python

Not part of `make test`: it needs BFCL's package.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from scoring import Evidence, Execution, Run, Spec
from scoring.evidence.conversations import Conversation
from scoring.evidence.state import StateSnapshot, StateSource
from scoring.judge.conversation import judge_conversation

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
_RUNNER = Path(__file__).with_name("_bfcl_multiturn_runner.py")
Turns = list[list[str]]


def _changed(call: str) -> str | None:
    """The call with its first literal argument changed (a string lengthened, a number moved)."""
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call):
        return None
    for arg in [*node.args, *(k.value for k in node.keywords)]:
        if isinstance(arg, ast.Constant) and not isinstance(arg.value, bool):
            if isinstance(arg.value, str):
                arg.value = arg.value + "_x"
            elif isinstance(arg.value, int | float):
                arg.value = arg.value + 1
            else:
                continue
            return ast.unparse(node)
    return None


def candidates(truth: Turns) -> list[Turns]:
    """The truth, then one change each: every kind at every checked turn (first calls only)."""
    out = [truth]

    def variant(turn: int, calls: list[str]) -> None:
        out.append([calls if i == turn else list(t) for i, t in enumerate(truth)])

    for t, calls in enumerate(truth):
        if not calls:
            out.append(
                [["ls(a=True)"] if i == t else list(x) for i, x in enumerate(truth)]
            )  # a call where none
            continue
        variant(t, [])
        for i in range(min(len(calls), 3)):
            variant(t, calls[:i] + calls[i + 1 :])
        variant(t, [calls[0], *calls])
        if len(calls) > 1:
            variant(t, [calls[1], calls[0], *calls[2:]])
        changed = _changed(calls[0])
        if changed is not None:
            variant(t, [changed, *calls[1:]])
        if t + 1 < len(truth):
            moved = [list(x) for x in truth]
            moved[t + 1] = [calls[-1], *moved[t + 1]]
            moved[t] = calls[:-1]
            out.append(moved)
        if t > 0:
            merged = [list(x) for x in truth]
            merged[t - 1] = [*merged[t - 1], *calls]
            merged[t] = []
            out.append(merged)
    unique = {json.dumps(c): c for c in out}  # dropping a turn's only call is emptying it
    return list(unique.values())


def spec_for(entry_id: str, truth: list[dict[str, Any]]) -> Spec:
    turns: list[Any] = []
    for turn in truth:
        if not turn["calls"]:
            turns.append("unchecked")
            continue
        results: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for call in turn["calls"]:
            results[call["name"]].append({"text": {"any_of": [call["result"]]}})
        state = {f"/{name}": {"any_of": [value]} for name, value in turn["state"].items()}
        turns.append({"results": dict(results), "state": state})
    return Spec.model_validate({"name": entry_id, "multi_turn": "bfcl", "turns": turns})


def _failed(result: str) -> bool:
    return result.startswith("Error during execution")


def conversation_of(entry_id: str, turns: list[dict[str, Any]]) -> Conversation:
    evidence = []
    for index, turn in enumerate(turns):
        executions = tuple(
            Execution(
                span_id=f"{index}-{n}",
                tool_name=call["name"],
                arguments={},
                arguments_valid=True,
                error=_failed(call["result"]),
                paused=False,
                from_history=False,
                duration_ms=1,
                agent_path=None,
                call_id=None,
                start_ns=(index * 1000 + n) * 10**6,
                end_ns=(index * 1000 + n) * 10**6 + 1,
                result_text=call["result"],
            )
            for n, call in enumerate(turn["calls"])
        )
        snapshot = StateSnapshot(turn["state"], True, f"state-{index}", index)
        run = Run(f"{entry_id}-{index}", f"trace-{index}", entry_id, "bfcl", "bfcl", None, 1, {})
        evidence.append(Evidence(run, executions, (), state=_source(snapshot)))
    return Conversation(entry_id, entry_id, len(turns), tuple(evidence))


def _source(snapshot: StateSnapshot) -> StateSource:
    return lambda: snapshot


def _bfcl_data(python: str) -> Path:
    code = "import bfcl_eval, pathlib; print(pathlib.Path(bfcl_eval.__file__).parent / 'data')"
    return Path(
        subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    )


def _jobs(data: Path, categories: list[str], limit: int | None) -> list[dict[str, Any]]:
    jobs = []
    for category in categories:
        lines = (data / "possible_answer" / f"BFCL_v4_{category}.json").read_text().splitlines()
        for line in lines[:limit]:
            answer = json.loads(line)
            for index, turns in enumerate(candidates(answer["ground_truth"])):
                jobs.append({"category": category, "id": answer["id"], "index": index, "turns": turns})
    return jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--bfcl-python",
        default=os.environ.get("TRACESCORE_BFCL_PYTHON", ".venv-bfcl/bin/python"),
        help="the Python of a venv with bfcl-eval installed (env TRACESCORE_BFCL_PYTHON)",
    )
    parser.add_argument("--categories", nargs="*", default=list(CATEGORIES))
    parser.add_argument("--limit", type=int, default=None, help="entries per category (default all)")
    parser.add_argument("--show", type=int, default=20, help="disagreements printed")
    args = parser.parse_args()
    jobs = _jobs(_bfcl_data(args.bfcl_python), args.categories, args.limit)
    text = "".join(json.dumps(job) + "\n" for job in jobs)
    done = subprocess.run(
        [args.bfcl_python, str(_RUNNER)], input=text, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"BFCL's runner failed:\n{done.stderr[-4000:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    tally: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    shown = 0
    for row in rows:
        verdict = judge_conversation(
            spec_for(row["id"], row["truth"]), conversation_of(row["id"], row["turns"])
        )
        agree = bool(verdict.passed) == bool(row["valid"])
        tally[row["category"]]["agree" if agree else "disagree"] += 1
        tally[row["category"]][f"bfcl {'pass' if row['valid'] else 'fail'}"] += 1
        if not agree and shown < args.show:
            shown += 1
            print(
                f"{row['category']} {row['id']} candidate {row['index']}: BFCL {row['valid']} "
                f"({row['error_type']}), tracescore {verdict.passed}: {verdict.reason}"
            )
    for category, counts in tally.items():
        total = counts["agree"] + counts["disagree"]
        print(
            f"{category}: {counts['agree']}/{total} agree ({100 * counts['agree'] / max(total, 1):.2f} %); "
            f"BFCL passes {counts['bfcl pass']}, fails {counts['bfcl fail']}"
        )


if __name__ == "__main__":
    main()

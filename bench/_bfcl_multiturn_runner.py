"""BFCL's own multi-turn checker over candidate conversations; run with the Python of a venv that has
`bfcl-eval`.

Reads JSON lines `{"category", "id", "index", "turns"}` on stdin (`turns`: per turn, the candidate's
call strings, BFCL's decoded form `func(arg=value)`), prints one JSON line per candidate: BFCL's
verdict (`multi_turn_checker`) and error type, and what tracescore needs to judge the same
conversation from traces: per turn, each call's name and execution result (as BFCL's own execution
gives it) and the environment's state after the turn; and the same for the ground truth. Uses only
bfcl_eval's public functions; imports nothing of tracescore.

    .venv-bfcl/bin/python bench/_bfcl_multiturn_runner.py < candidates.jsonl
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import bfcl_eval
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

DATA = Path(bfcl_eval.__file__).parent / "data"
MODEL = "tracescore-bench"


def _load(category: str) -> dict[str, tuple[dict[str, Any], list[list[str]]]]:
    entries = {}
    for line in (DATA / f"BFCL_v4_{category}.json").read_text().splitlines():
        entry = json.loads(line)
        entries[entry["id"]] = entry
    truths = {}
    for line in (DATA / "possible_answer" / f"BFCL_v4_{category}.json").read_text().splitlines():
        answer = json.loads(line)
        truths[answer["id"]] = (entries[answer["id"]], answer["ground_truth"])
    return truths


def plain(value: Any, path: tuple[int, ...] = ()) -> Any:
    """An instance attribute as JSON: objects by their public attributes, tuples and sets as lists; a
    reference back to an object being written (a directory's `parent`) is left out as null."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if id(value) in path:
        return None
    inner = (*path, id(value))
    if isinstance(value, dict):
        return {str(k): plain(v, inner) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, inner) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((plain(v, inner) for v in value), key=json.dumps)
    if hasattr(value, "__dict__"):
        return {k: plain(v, inner) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


def _name(call: str) -> str:
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return call.split("(", 1)[0]
    func = node.func if isinstance(node, ast.Call) else node
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", call.split("(", 1)[0])


def _trace(entry: dict[str, Any], turns: list[list[str]], model: str, long_context: bool) -> list[Any]:
    """Each turn's calls with their results, and the state after it, from BFCL's own execution."""
    out = []
    instances: dict[str, Any] = {}
    for calls in turns:
        results, instances = execute_multi_turn_func_call(
            func_call_list=calls,
            initial_config=entry["initial_config"],
            involved_classes=entry["involved_classes"],
            model_name=model,
            test_entry_id=entry["id"],
            long_context=long_context,
            is_evaL_run=True,
        )
        state = {name: plain(instance) for name, instance in instances.items()}
        out.append(
            {
                "calls": [{"name": _name(c), "result": r} for c, r in zip(calls, results, strict=True)],
                "state": state,
            }
        )
    return out


def main() -> None:
    loaded: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(sys.stdin):
        job = json.loads(line)
        category = job["category"]
        if category not in loaded:
            loaded[category] = _load(category)
        entry, truth = loaded[category][job["id"]]
        long_context = "long_context" in category
        model = f"{MODEL}-{number}"  # BFCL keeps instances by model name and entry: a fresh one each
        decoded = [[calls] for calls in job["turns"]]
        verdict = multi_turn_checker(decoded, truth, entry, category, model)
        row = {
            "category": category,
            "id": job["id"],
            "index": job["index"],
            "valid": verdict["valid"],
            "error_type": verdict.get("error_type"),
            "turns": _trace(entry, job["turns"], f"{model}-trace", long_context),
            "truth": _trace(entry, truth, f"{model}-truth", long_context),
        }
        print(json.dumps(row), flush=True)
        _forget(f"{MODEL}_{number}_".replace("-", "_"))


def _forget(prefix: str) -> None:
    """BFCL keeps every environment it made in its module's globals: drop this candidate's."""
    names = vars(multi_turn_utils)
    for name in [n for n in names if n.startswith(prefix)]:
        del names[name]


if __name__ == "__main__":
    main()

"""BFCL's own AST checker over candidate calls; run with the Python of a venv that has `bfcl-eval`.

Reads JSON lines `{"category", "id", "output"}` on stdin (`output` is a decoded model output, BFCL's
`[{function: {param: value}}]`), prints one JSON line per candidate: BFCL's verdict and error type, and
for the parallel categories whether BFCL's own per-call verdicts admit a one-to-one pairing (what its
first-fit walk misses). Uses only bfcl_eval's public functions; imports nothing of tracescore.

    .venv-bfcl/bin/python bench/_bfcl_runner.py < candidates.jsonl
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import bfcl_eval
from bfcl_eval.constants.enums import Language
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker, simple_function_checker

# A model whose config does not rewrite `.` in function names: names are compared as written.
MODEL = "gorilla-openfunctions-v2"
DATA = Path(bfcl_eval.__file__).parent / "data"


def _load(category: str) -> dict[str, tuple[list[Any], list[Any]]]:
    questions = {}
    for line in (DATA / f"BFCL_v4_{category}.json").read_text().splitlines():
        entry = json.loads(line)
        questions[entry["id"]] = entry["function"]
    answers = {}
    for line in (DATA / "possible_answer" / f"BFCL_v4_{category}.json").read_text().splitlines():
        entry = json.loads(line)
        answers[entry["id"]] = (questions[entry["id"]], entry["ground_truth"])
    return answers


def _pairing_exists(functions: list[Any], output: list[Any], truth: list[Any]) -> bool:
    """Some one-to-one pairing of outputs with ground-truth calls that BFCL's per-call check accepts."""
    if len(output) != len(truth) or len(truth) > 7:
        return False
    fits = [
        [
            simple_function_checker(
                next(f for f in functions if f["name"] == next(iter(gt))), out, gt, Language.PYTHON, MODEL
            )["valid"]
            for out in output
        ]
        for gt in truth
    ]
    return any(all(fits[i][j] for i, j in enumerate(p)) for p in itertools.permutations(range(len(output))))


def main() -> None:
    data: dict[str, dict[str, tuple[list[Any], list[Any]]]] = {}
    for line in sys.stdin:
        candidate = json.loads(line)
        category = candidate["category"]
        if category not in data:
            data[category] = _load(category)
        functions, truth = data[category][candidate["id"]]
        output = candidate["output"]
        result = ast_checker(functions, output, truth, Language.PYTHON, category, MODEL)
        row: dict[str, Any] = {"valid": bool(result["valid"]), "error_type": result.get("error_type")}
        if "parallel" in category and not result["valid"]:
            row["pairing_exists"] = _pairing_exists(functions, output, truth)
        print(json.dumps(row), flush=False)


if __name__ == "__main__":
    main()

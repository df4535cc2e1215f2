"""`score --format json` prints an indented array (docs/scoring.md): written a chunk of verdicts at a time,
from verdicts still held as their JSON text, it is byte for byte what the json module prints, at every
chunk boundary and with the values orjson alone would read otherwise (integers beyond 64 bits)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from scoring.batch.score import Scored
from scoring.report import text


def _scored(i: int) -> Scored:
    verdict: dict[str, Any] = {
        "run_id": f"run-{i}",
        "task": "tâche" if i % 2 else None,
        "spec": "s",
        "label": "pass",
        "value": [1.0, 0.5, None][i % 3],
        "checks": [
            {"kind": "arguments", "expected": {"n": 10**20 if i == 3 else i, "x": []}, "observed": {}}
        ],
        "detail": {"reconciliation": {"calls": [{"span_id": "1234567890123456789", "call_id": None}]}},
    }
    compact = json.dumps(verdict, separators=(",", ":"), ensure_ascii=False)
    return Scored(f"run-{i}", verdict["task"], "s", "pass", verdict["value"], None, text=compact)


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 5, 7])
def test_chunks_print_the_same_bytes_as_the_json_module(count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text, "_VERDICTS_PER_WRITE", 2)
    verdicts = [_scored(i) for i in range(count)]
    out = io.StringIO()
    text.write_verdicts_json(verdicts, out)
    expected = json.dumps([json.loads(v.text or "") for v in verdicts], indent=2, ensure_ascii=False)
    assert out.getvalue() == expected + "\n"
    assert out.getvalue() == text.verdicts_json(verdicts) + "\n"
    if count > 3:
        assert '"n": 100000000000000000000' in out.getvalue()  # not 1e+20

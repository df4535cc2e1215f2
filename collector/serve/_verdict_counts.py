"""Verdict counts by spec, task and label for `/metrics`, in a bounded number of series.

Spec names come from the operator's spec files, but task ids come from the traces: any value an agent
sends. A series per task would let traffic grow every Prometheus that scrapes the server without bound,
so the first `MAX_PAIRS` (spec, task) pairs this process judges keep series of their own, and the
verdicts of every later pair count under their spec with the task `OVERFLOW_TASK`. A spec's total (and
so its pass rate) stays exact either way; only the split by task is cut short. docs/online.md
("Metrics") documents the cap.
"""

from __future__ import annotations

import threading
from collections import Counter

MAX_PAIRS = 200
OVERFLOW_TASK = "_other"
# Every pair has a series for each label from its first verdict on, at 0 until one comes: a rate over a
# label that has not been seen yet is then 0, not missing, and a pass rate's drop shows at its first fail.
LABELS = ("pass", "fail", "error")


class VerdictCounts:
    """Counted on the online scorer's thread, read by `/metrics` on the server's loop."""

    def __init__(self, max_pairs: int = MAX_PAIRS) -> None:
        self._max_pairs = max_pairs
        self._counts: Counter[tuple[str, str, str]] = Counter()
        self._pairs: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def count(self, spec: str, task: str | None, label: str) -> None:
        pair = (spec, task or "")
        with self._lock:
            if pair not in self._pairs:
                if len(self._pairs) >= self._max_pairs:
                    pair = (spec, OVERFLOW_TASK)
                if pair not in self._pairs:  # the overflow pair of a spec is added beyond the cap
                    self._pairs.add(pair)
                    self._counts.update({(*pair, label_): 0 for label_ in LABELS})
            self._counts[(*pair, label)] += 1

    def items(self) -> list[tuple[tuple[str, str, str], int]]:
        """((spec, task, label), count), sorted; the task is "" for verdicts with no task."""
        with self._lock:
            return sorted(self._counts.items())

"""The checks of issue 31 on hand-built evidence: the smallest passing and failing cases, and the
properties the end-to-end tests cannot sweep (tests/scoring/checks/test_spec_parity_e2e.py)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scoring import Evidence, Execution, Spec, Verdict, judge
from tests.scoring.checks.test_checks_catalogue import ex, run


def verdict(fields: dict[str, Any], *executions: Execution) -> Verdict:
    spec = Spec.model_validate({"name": "s", **fields})
    return judge(spec, Evidence(run(), tuple(executions), ()))


def calls(*names: str) -> list[Execution]:
    return [ex(name, {}, at=(10 * i, 10 * i + 5)) for i, name in enumerate(names)]


def subsequence(*names: str) -> dict[str, Any]:
    return {"trajectory": {"mode": "subsequence", "tools": list(names)}}


def test_subsequence_needs_a_distinct_call_for_each_item() -> None:
    assert verdict(subsequence("f", "g"), *calls("g", "f", "x", "g")).passed
    assert not verdict(subsequence("f", "f"), *calls("f")).passed
    assert not verdict(subsequence("f", "g"), *calls("g", "f")).passed


def test_subsequence_never_counts_a_failed_call() -> None:
    refused = [
        ex("f", {}, at=(0, 5)),
        ex("g", {}, at=(10, 15), error=True),
        ex("g", {}, at=(20, 25), paused=True),
    ]
    assert not verdict(subsequence("f", "g"), *refused).passed


@given(
    st.lists(st.sampled_from("abc"), min_size=1, max_size=4),
    st.lists(st.sampled_from("abc"), max_size=7),
)
def test_subsequence_agrees_with_brute_force(reference: list[str], names: list[str]) -> None:
    expected = any(
        [names[i] for i in chosen] == reference for chosen in combinations(range(len(names)), len(reference))
    )
    assert verdict(subsequence(*reference), *calls(*names)).passed is expected

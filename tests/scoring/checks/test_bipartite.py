"""scoring.checks._bipartite: maximum matching, checked against brute force and against greedy first-fit."""

from __future__ import annotations

from itertools import permutations

from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.checks._bipartite import matching_size, max_matching


def _valid(edges: list[list[int]], matching: list[int]) -> bool:
    partners = [j for j in matching if j >= 0]
    return len(partners) == len(set(partners)) and all(
        j in edges[i] for i, j in enumerate(matching) if j >= 0
    )


def _brute_force(n_left: int, n_right: int, edges: list[list[int]]) -> int:
    best = 0
    slots = list(range(n_right)) + [-1] * n_left
    for assignment in permutations(slots, n_left):
        if all(j == -1 or j in edges[i] for i, j in enumerate(assignment)):
            best = max(best, sum(1 for j in assignment if j >= 0))
    return best


def _greedy(edges: list[list[int]]) -> int:
    used: set[int] = set()
    for options in edges:
        choice = next((j for j in options if j not in used), None)
        if choice is not None:
            used.add(choice)
    return len(used)


def test_empty_graphs() -> None:
    assert max_matching(0, 0, []) == []
    assert max_matching(2, 0, [[], []]) == [-1, -1]
    assert max_matching(0, 3, []) == []


def test_a_perfect_matching_is_found() -> None:
    matching = max_matching(3, 3, [[0], [0, 1], [1, 2]])
    assert matching == [0, 1, 2]


def test_bfcl_parallel_counterexample_m() -> None:
    """Reference §1.6 (✔ M): expected [f(x∈{1,2}), f(x∈{1})], outputs [f(1), f(2)]. First-fit gives
    f(1) to the first expectation and leaves the second with nothing; a maximum matching pairs both."""
    edges = [[0, 1], [0]]  # expectation 0 accepts output 0 (x=1) and 1 (x=2); expectation 1 only output 0
    assert _greedy(edges) == 1
    matching = max_matching(2, 2, edges)
    assert matching == [1, 0]
    assert matching_size(matching) == 2


def test_augmenting_paths_longer_than_one_step() -> None:
    edges = [[0, 1], [0, 2], [1], [2, 3]]
    assert matching_size(max_matching(4, 4, edges)) == 4


def test_a_mismatched_edge_table_is_refused() -> None:
    try:
        max_matching(2, 2, [[0]])
    except ValueError as exc:
        assert "2 left vertices" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected ValueError")


def test_long_chains_do_not_recurse() -> None:
    n = 3000  # a chain where each left vertex i accepts i and i+1, fed in the worst order
    edges = [[i + 1, i] if i + 1 < n else [i] for i in range(n)]
    assert matching_size(max_matching(n, n, edges)) == n


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 4).flatmap(
        lambda n_left: st.integers(0, 4).flatmap(
            lambda n_right: st.tuples(
                st.just(n_left),
                st.just(n_right),
                st.lists(
                    st.lists(st.integers(0, max(n_right - 1, 0)), max_size=n_right, unique=True)
                    if n_right
                    else st.just([]),
                    min_size=n_left,
                    max_size=n_left,
                ),
            )
        )
    )
)
def test_matching_is_maximum_and_valid(graph: tuple[int, int, list[list[int]]]) -> None:
    n_left, n_right, edges = graph
    matching = max_matching(n_left, n_right, edges)
    assert len(matching) == n_left
    assert _valid(edges, matching)
    assert matching_size(matching) == _brute_force(n_left, n_right, edges)
    assert matching_size(matching) >= _greedy(edges)

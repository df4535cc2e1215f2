"""Maximum bipartite matching (Hopcroft–Karp), for checks that pair expected calls with executions.

Greedy first-fit pairing (BFCL's parallel checker, agentevals' set modes) gives false negatives when
acceptable-value sets overlap: the first execution that fits an expectation may be the only one that
fits a later expectation. A maximum matching never misses an assignment that exists.

Iterative (no recursion), so a run with thousands of calls cannot hit Python's recursion limit.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

_FREE = -1


def max_matching(n_left: int, n_right: int, edges: Sequence[Sequence[int]]) -> list[int]:
    """`edges[i]` lists the right vertices left vertex `i` may pair with; returns, for each left vertex,
    its partner in one maximum matching, or -1."""
    if len(edges) != n_left:
        raise ValueError(f"edges has {len(edges)} rows for {n_left} left vertices")
    left: list[int] = [_FREE] * n_left
    right: list[int] = [_FREE] * n_right
    while True:
        layer = _layers(edges, left, right)
        if layer is None:
            return left
        for start in range(n_left):
            if left[start] == _FREE:
                _augment(start, edges, left, right, layer)


def matching_size(matching: Sequence[int]) -> int:
    return sum(1 for partner in matching if partner != _FREE)


def _layers(edges: Sequence[Sequence[int]], left: list[int], right: list[int]) -> list[int] | None:
    """BFS from every free left vertex; the distance of each left vertex, or None when no augmenting
    path exists (the matching is maximum)."""
    unreached = len(left) + 1
    distance = [unreached] * len(left)
    queue: deque[int] = deque()
    for vertex, partner in enumerate(left):
        if partner == _FREE:
            distance[vertex] = 0
            queue.append(vertex)
    found = False
    while queue:
        vertex = queue.popleft()
        for other in edges[vertex]:
            mate = right[other]
            if mate == _FREE:
                found = True
            elif distance[mate] == unreached:
                distance[mate] = distance[vertex] + 1
                queue.append(mate)
    return distance if found else None


def _augment(
    start: int, edges: Sequence[Sequence[int]], left: list[int], right: list[int], distance: list[int]
) -> bool:
    """One vertex-disjoint shortest augmenting path from `start` along the BFS layers, applied."""
    dead = len(left) + 1
    path: list[tuple[int, int]] = []  # (left vertex, right vertex it would take)
    cursor = [0] * len(left)
    stack = [start]
    while stack:
        vertex = stack[-1]
        options = edges[vertex]
        advanced = False
        while cursor[vertex] < len(options):
            other = options[cursor[vertex]]
            cursor[vertex] += 1
            mate = right[other]
            if mate == _FREE:
                path.append((vertex, other))
                for lv, rv in path:
                    left[lv] = rv
                    right[rv] = lv
                return True
            if distance[mate] == distance[vertex] + 1:
                path.append((vertex, other))
                stack.append(mate)
                advanced = True
                break
        if not advanced:
            distance[vertex] = dead  # no augmenting path through here in this phase
            stack.pop()
            if path:
                path.pop()
    return False

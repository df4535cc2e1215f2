"""The scope series of `/metrics` are bounded (docs/online.md): at most `SCOPE_SERIES` scopes, the rest
summed under `scope="_other"`, and the server tells at most `MAX_SCOPES` scopes apart at all, so a
sender inventing scope names grows neither the exposition nor the server's memory."""

from __future__ import annotations

import pyarrow as pa

from collector.serve._metrics import SCOPE_SERIES, scope_series
from collector.store.scope_tally import ScopeCount, ScopeTally


def _rows(names: list[str | None], versions: list[str | None]) -> pa.Table:
    return pa.table(
        {"scope_name": pa.array(names, pa.string()), "scope_version": pa.array(versions, pa.string())}
    )


def test_the_tally_counts_spans_and_executing_spans_per_scope_and_version() -> None:
    tally = ScopeTally()
    tally.add(_rows(["a", "a", "b", None], ["1", "1", None, None]), [True, False, False, False])
    tally.add(_rows(["a", "a"], ["2", "1"]), [False, True])
    assert tally.counts() == [
        ScopeCount("a", "1", 3, 2),
        ScopeCount("", "", 1, 0),
        ScopeCount("a", "2", 1, 0),
        ScopeCount("b", "", 1, 0),
    ]


def test_scopes_past_the_tally_bound_count_under_other() -> None:
    tally = ScopeTally(max_scopes=2)
    tally.add(_rows(["a", "b"], ["", ""]), [True, False])
    tally.add(_rows(["c", "d", "a"], ["", "", ""]), [True, True, False])
    assert tally.counts() == [
        ScopeCount("_other", "", 2, 2),
        ScopeCount("a", "", 2, 1),
        ScopeCount("b", "", 1, 0),
    ]


def test_metrics_show_the_scopes_with_most_spans_and_sum_the_rest() -> None:
    counts = [ScopeCount(f"s{i:02}", "1.0", 100 - i, i % 2) for i in range(SCOPE_SERIES + 5)]
    counts.append(ScopeCount("_other", "", 7, 3))  # the tally's own overflow joins the shown `_other`
    series = scope_series(counts)
    assert len(series) == SCOPE_SERIES + 1
    assert series[0] == ('{scope="s00",version="1.0"}', counts[0])
    rest = counts[SCOPE_SERIES:]
    assert series[-1] == (
        '{scope="_other",version=""}',
        ScopeCount("_other", "", sum(c.spans for c in rest), sum(c.executing for c in rest)),
    )

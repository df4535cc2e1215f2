"""The index of specs by what they select (issue 17) picks exactly the specs that testing every spec's
`select` against the run picks: property-tested over generated selects and runs (run fields and
attributes, lists of options, absent keys, bools against text, numbers against text and other numbers,
values that are lists or objects), and on the cases that decide it by hand."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.evidence.runs import Run
from scoring.spec.select import SelectIndex, selects

KEYS = ["task", "run", "agent", "service.name", "session", "tier", "env", "flag"]
SCALARS = st.one_of(
    st.sampled_from(["a", "A", "b", "1", "1.0", "true", "True", "FALSE", "nan", "", "[1, 2]"]),
    st.booleans(),
    st.sampled_from([0, 1, -1, 2**53 + 1, 10**20]),
    st.sampled_from([0.0, 1.0, 1.5, -0.0, float("nan"), float("inf"), 2.0**53]),
    st.text(max_size=3),
)
ATTRIBUTES = st.one_of(SCALARS, st.none(), st.lists(SCALARS, max_size=2), st.just({"k": 1}))
SELECTS = st.dictionaries(
    st.sampled_from(KEYS), st.one_of(SCALARS, st.lists(SCALARS, max_size=3)), max_size=3
)


def _field(value: Any) -> Any:
    # A run's own fields are text or absent as the store gives them; attributes are any JSON.
    return None if value is None else str(value)


@st.composite
def runs(draw: st.DrawFn) -> Run:
    fields = {
        key: draw(st.one_of(st.none(), SCALARS)) for key in ("task", "run", "agent", "service", "session")
    }
    attributes = draw(st.dictionaries(st.sampled_from(KEYS), ATTRIBUTES, max_size=4))
    return Run(
        run_id=_field(fields["run"]) or "r",
        trace_id="t",
        task_id=_field(fields["task"]),
        service_name=_field(fields["service"]),
        agent_name=_field(fields["agent"]),
        session_id=_field(fields["session"]),
        version=1,
        attributes=attributes,
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(SELECTS, max_size=12), st.lists(runs(), min_size=1, max_size=8))
def test_the_index_selects_what_every_select_selects(specs: list[dict[str, Any]], many: list[Run]) -> None:
    index = SelectIndex(specs)
    for run in many:
        naive = [p for p, select in enumerate(specs) if selects(select, run)]
        assert index.selected(run) == naive
        assert set(naive) <= set(index.candidates(run))


def _run(task_id: str | None = None, **attributes: Any) -> Run:
    return Run("run-1", "t", task_id, "shop", "leader", None, 1, attributes)


def test_cases_that_decide_it() -> None:
    specs: list[dict[str, Any]] = [
        {},  # every run
        {"task": "a"},
        {"task": ["b", "c"]},
        {"tier": 1},  # 1 == 1.0, and "1" as text
        {"flag": True},  # true as text in any case
        {"tier": 1.5, "task": "a"},  # filed by task; the tier is tested after
        {"env": "prod"},
    ]
    index = SelectIndex(specs)
    assert index.selected(_run("a")) == [0, 1]
    assert index.selected(_run("c", tier=1.0)) == [0, 2, 3]
    assert index.selected(_run(None, tier="1")) == [0, 3]
    assert index.selected(_run(None, tier="1.0")) == [0]  # "1.0" is neither 1 nor its text
    assert index.selected(_run(None, flag="TRUE")) == [0, 4]
    assert index.selected(_run(None, flag=1)) == [0]  # a bool is not a number
    assert index.selected(_run("a", tier=1.5)) == [0, 1, 5]
    assert index.selected(_run("a", tier=2)) == [0, 1]
    assert index.selected(_run(None, task="a")) == [0, 1]  # a task attribute when the run has none
    assert index.candidates(_run("zzz")) == [0]  # no other spec is even tried

"""Set-based scoring (scoring/batch/score.py) gives exactly the Python judge's verdicts: the contract of
issue 7.

Histories are stored through the real ingest path (tests/_history.py): recognition, the writer and run
completion. Each test scores them both ways and compares the verdicts as objects, as `score --format
json` prints them, and as the `verdicts` table stores them.
"""

from __future__ import annotations

import io
import json
import math
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from collector.cli import main
from scoring import (
    Spec,
    Verdict,
    ensure_verdict_schema,
    matches_subset,
    score_history,
    score_runs,
    store_history,
    store_verdicts,
    verdict_json,
)
from scoring.batch import score as batch
from scoring.batch._plan import not_compiled
from scoring.batch._sql_match import subset
from scoring.report.text import verdicts_json, write_verdicts_json
from tests._history import Ask, Call, Handoff, RunPlan, build_history

TOOLS = ["lookup", "quote", "notify", "it's", "é x"]


def spec(**fields: Any) -> Spec:
    return Spec.model_validate({"name": "s", **fields})


# ---- one hand-built history with every kind of execution ---------------------------------------------

PLANS = [
    RunPlan(
        (
            Call("lookup", '{"region": "north", "day": 1}'),
            Call("quote", '{"region":"north"}', duration_ms=700),
        )
    ),
    RunPlan(
        (Call("lookup", '{"region": "north"}', error=True), Ask("quote", {"region": "north"}, call_id="c9"))
    ),
    RunPlan((Call("notify", None, paused=True), Call("lookup", '{"region":"north"}', from_history=True))),
    RunPlan((Call("", "{}"), Call("quote", "not json at all"), Call("quote", None))),
    RunPlan(
        (
            Call("lookup", '{"region":"south"}', call_id="k1", requested=True),
            Call("quote", '{"region": "north", "region": "south"}', depth=1, duration_ms=2500.5),
            Call("notify", '{"to": "ops"}', depth=2, error=True),
        ),
        task="task-b",
        attributes={"tier": "gold"},
    ),
    RunPlan((), task=None),
    RunPlan((Ask("refund", {"order": "A1"}, call_id="r1"), Call("it's", '{"q": "it\'s"}', duration_ms=0.25))),
    RunPlan(
        (
            Call(
                "quote",
                '{"region": "north", "n": 1.0, "tags": ["a", "b"], "nested": {"x": [1, {"y": null}]}}',
            ),
            Call("quote", '{"n": 100000000000000000000, "flag": true}', call_id="c1", requested=True),
            Call("lookup", "[1, 2]", depth=1),
        ),
        attributes={"tier": 1},
    ),
    # One run over two traces (a resumed session): its executions are judged together.
    RunPlan((Call("lookup", '{"region": "north"}'),), attributes={"tracescore.run.id": "resumed"}),
    RunPlan((Call("quote", '{"region": "south"}', error=True),), attributes={"tracescore.run.id": "resumed"}),
    # A handoff (executions.kind 'handoff'): seen only by the specs that name `transfer_to_helper`.
    RunPlan((Handoff("helper", call_id="h1"), Call("lookup", '{"region": "north"}', depth=1)), task="task-h"),
]

SPECS = [
    spec(expected_tools=["lookup", "quote", "lookup"]),
    spec(expected_tools=["quote"], arguments={"quote": {"region": "north"}}, allow_additional=False),
    spec(arguments={"quote": [{"region": "south"}, {}, {"n": 1}, {"tags": ["a", "b"]}]}),
    spec(
        arguments={
            "quote": [{"nested": {"x": [1, {"y": None}]}}, {"n": 100000000000000000000}, {"flag": True}]
        }
    ),
    spec(arguments={"quote": {"n": 1e20}, "lookup": [{"region": "north", "day": 1.0}]}),
    spec(expected_tools=["lookup"], scope="leader", allow_additional=False, strict_counts="attempts"),
    spec(expected_tools=["notify", "refund"], strict_counts="attempts", allow_additional=False),
    spec(latency={"max_ms": {"quote": 500, "*": 2000.0}}),
    spec(latency={"max_ms": {"it's": 0.1}}),
    spec(latency={"max_ms": {"*": 5}}, scope="leader"),
    spec(forbidden_tools=["notify", "it's"], expected_tools=["lookup"]),
    spec(forbidden_tools=["notify"], strict_counts="attempts"),
    spec(select={"task": "task-b"}, expected_tools=["quote"]),
    spec(select={"tier": ["gold", "1"]}, expected_tools=["lookup"]),
    spec(select={"service.name": "shop", "task": ["task-a", "nope"]}, arguments={"it's": {"q": "it's"}}),
    spec(select={"task": "none of them"}, expected_tools=["lookup"]),
    spec(select={"task": "task-h"}, expected_tools=["lookup"], allow_additional=False),
    spec(select={"task": "task-h"}, expected_tools=["transfer_to_helper", "lookup"], allow_additional=False),
    spec(select={"task": "task-h"}, forbidden_tools=["transfer_to_helper"], scope="leader"),
]


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("history") / "history.duckdb"
    build_history(path, PLANS)
    return path


@pytest.fixture
def connection(history: Path, tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    copy = tmp_path / "copy.duckdb"
    shutil.copy(history, copy)
    con = duckdb.connect(str(copy))
    try:
        yield con
    finally:
        con.close()


def _named(specs: list[Spec]) -> list[Spec]:
    return [
        Spec.model_validate({**s.model_dump(exclude_none=True, by_alias=True), "name": f"s{i}"})
        for i, s in enumerate(specs)
    ]


def _difference(python: list[Verdict], sql: list[Verdict]) -> str:
    for p, s in zip(python, sql, strict=False):
        if p != s:
            mine, theirs = p.to_dict(), s.to_dict()
            keys = [k for k in mine if mine[k] != theirs.get(k)]
            return f"run {p.run_id} spec {p.spec}: " + "; ".join(
                f"{k}: {mine[k]!r} != {theirs.get(k)!r}" for k in keys
            )
    return f"{len(python)} verdicts from Python, {len(sql)} from SQL"


def assert_same_verdicts(con: duckdb.DuckDBPyConnection, specs: list[Spec]) -> list[Verdict]:
    python = list(score_runs(con, specs))
    sql = list(score_history(con, specs))
    assert python == sql, _difference(python, sql)
    assert verdicts_json(sql) == verdicts_json(python)  # what `score --format json` prints
    return sql


def _stored(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    rows = con.execute(
        "SELECT run_id, trace_id, task_id, spec, spec_fingerprint, profile, label, passed, value, reason, "
        "checks, missing_tools, additional_tools, failed_argument_checks, latency_violations, run_version, "
        "schema_version, verdict FROM verdicts ORDER BY run_id, spec, run_version"
    ).fetchall()
    return [
        tuple(json.loads(v) if 10 <= i <= 14 or i == 17 else v for i, v in enumerate(row)) for row in rows
    ]


def test_every_spec_of_the_subset_compiles() -> None:
    assert [not_compiled(s) for s in SPECS] == [None] * len(SPECS)


def test_verdicts_equal_the_python_judge(connection: duckdb.DuckDBPyConnection) -> None:
    verdicts = assert_same_verdicts(connection, _named(SPECS))
    # The history exercises what it is meant to: failures of every kind, and passes.
    assert {v.label for v in verdicts} == {"pass", "fail"}
    reasons = " ".join(v.reason or "" for v in verdicts)
    for text in (
        "(errored)",
        "(paused)",
        "requested but never executed",
        "left out (scope: leader)",
        "slower than",
    ):
        assert text in reasons
    assert any(c["state"] == "unnamed" for v in verdicts for c in v.detail["reconciliation"]["calls"])
    assert any(v.run_id == "resumed" and v.run_version == 2 for v in verdicts)
    # The handoff run: strict without naming the handoff passes; naming it, it is a clean execution of
    # the tool the model called; forbidding it fails (and scope: leader keeps it: the lead handed off).
    last = {f"s{i}" for i in range(len(SPECS) - 3, len(SPECS))}
    handoff = [(v.passed, v.reason) for v in sorted(verdicts, key=lambda v: v.spec) if v.spec in last]
    assert handoff == [
        (True, None),
        (True, None),
        (False, "forbidden tools ran: transfer_to_helper; 1 member execution(s) left out (scope: leader)"),
    ]


def test_the_stored_verdict_text_is_the_json_of_to_dict(connection: duckdb.DuckDBPyConnection) -> None:
    # verdict_json writes the verdict without building to_dict() first (online scoring's hot path).
    verdicts = list(score_runs(connection, _named(SPECS)))
    first = verdicts[0]
    odd = [
        replace(first, detail={"values": (1, 2.5, "é", {3: b"x"}, frozenset()), "n": None}),
        replace(first, detail={"big": 10**20, "checks": first.checks}),  # beyond orjson: the json module
    ]
    for verdict in [*verdicts, *odd]:
        expected = json.dumps(verdict.to_dict(), separators=(",", ":"), default=str)
        assert json.loads(verdict_json(verdict)) == json.loads(expected)
    # JSON has no NaN: stored as null rather than as text DuckDB's JSON type refuses.
    assert json.loads(verdict_json(replace(first, value=math.nan)))["value"] is None


@pytest.mark.parametrize("index", range(len(SPECS)))
def test_each_spec_alone_equals_the_python_judge(connection: duckdb.DuckDBPyConnection, index: int) -> None:
    assert_same_verdicts(connection, [SPECS[index]])


def test_values_sql_cannot_carry_exactly_are_judged_in_python(connection: duckdb.DuckDBPyConnection) -> None:
    beyond = spec(latency={"max_ms": {"quote": 2**53 + 1}})  # no DOUBLE equals it; Python compares exactly
    assert not_compiled(beyond) == f"{2**53 + 1} has no exact binary floating-point value"
    assert not_compiled(spec(expected_tools=["a\x00b"])) == "a NUL character in a name or value"
    assert not_compiled(spec(calls={"quote": {"min": 1}})) == "calls"
    assert_same_verdicts(connection, _named([SPECS[0], beyond]))


def test_a_mixed_list_keeps_score_runs_order(connection: duckdb.DuckDBPyConnection) -> None:
    outside = [
        spec(profile="reliability_eval", expected_tools=["lookup"]),
        spec(calls={"quote": {"min": 1}}),
        spec(trajectory={"mode": "subset", "tools": ["lookup", "quote"]}),
        spec(latency={"p95_ms": {"*": 100}}),
        spec(argument_rules={"quote": {"values": {"region": {"any_of": ["north"]}}}}),
    ]
    mixed = _named(
        [SPECS[0], outside[0], SPECS[1], outside[1], outside[2], SPECS[7], outside[3], outside[4], SPECS[12]]
    )
    assert [not_compiled(s) is None for s in mixed] == [
        True,
        False,
        True,
        False,
        False,
        True,
        False,
        False,
        True,
    ]
    assert_same_verdicts(connection, mixed)


def test_one_run_or_one_task(connection: duckdb.DuckDBPyConnection) -> None:
    specs = _named(SPECS[:3])
    run_id = next(iter(score_runs(connection, specs))).run_id
    for one_run, task in ((run_id, None), (None, "task-b"), ("no such run", None)):
        python = list(score_runs(connection, specs, run_id=one_run, task_id=task))
        assert list(score_history(connection, specs, run_id=one_run, task_id=task)) == python


def test_slices_of_the_history_give_the_same_verdicts(
    connection: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch, "RUNS_PER_QUERY", 3)  # a query per three runs, each with its ingest range
    mixed = _named([SPECS[0], spec(calls={"quote": {"min": 1}}), SPECS[7], SPECS[13]])
    assert_same_verdicts(connection, mixed)
    ensure_verdict_schema(connection)
    stored = list(score_history(connection, mixed, store=True))
    assert stored == list(score_runs(connection, mixed))
    assert len(_stored(connection)) == len(stored)


@pytest.mark.parametrize("count", [0, 1, 3])
def test_json_is_written_verdict_by_verdict_as_verdicts_json_prints_it(
    connection: duckdb.DuckDBPyConnection, count: int
) -> None:
    verdicts = list(score_runs(connection, _named(SPECS[:2])))[:count]
    out = io.StringIO()
    write_verdicts_json(verdicts, out)
    assert out.getvalue() == verdicts_json(verdicts) + "\n"


def test_stored_verdicts_equal_what_store_verdicts_writes(history: Path, tmp_path: Path) -> None:
    specs = _named([*SPECS, spec(calls={"quote": {"min": 1}})])
    stored = []
    for way in ("python", "iterated", "store_history"):
        copy = tmp_path / f"{way}.duckdb"
        shutil.copy(history, copy)
        con = duckdb.connect(str(copy))
        ensure_verdict_schema(con)
        if way == "python":
            count = store_verdicts(con, score_runs(con, specs))
        elif way == "iterated":
            count = sum(1 for _ in score_history(con, specs, store=True))
        else:
            count = store_history(con, specs)
        assert count > len(PLANS)
        stored.append(_stored(con))
        con.close()
    assert stored[1] == stored[0]
    assert stored[2] == stored[0]


def test_rescoring_replaces_the_stored_verdict(connection: duckdb.DuckDBPyConnection) -> None:
    ensure_verdict_schema(connection)
    specs = _named(SPECS[:2])
    first = store_history(connection, specs)
    assert store_history(connection, specs) == first
    assert sum(1 for _ in score_history(connection, specs, store=True)) == first
    row = connection.execute("SELECT count(*) FROM verdicts").fetchone()
    assert row is not None and row[0] == first


def test_the_cli_prints_what_the_python_judge_gives(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "cli.duckdb"
    shutil.copy(history, copy)
    specs = _named(SPECS[:4])
    spec_file = tmp_path / "specs.json"
    spec_file.write_text(json.dumps([s.model_dump(mode="json", exclude_none=True) for s in specs]))
    con = duckdb.connect(str(copy), read_only=True)
    expected = list(score_runs(con, specs))
    con.close()
    for output in ("json", "table"):
        code = main(["score", "--db", str(copy), "--spec", str(spec_file), "--format", output])
        printed = capsys.readouterr().out
        assert code == 1  # some runs fail
        if output == "json":
            assert printed == verdicts_json(expected) + "\n"
        else:
            assert f"{len(expected)} verdict(s)" in printed
    con = duckdb.connect(str(copy), read_only=True)
    assert len(_stored(con)) == len(expected)
    con.close()


# ---- the argument match, property-tested against scoring/checks/matching.py ------------------------------

KEYS = ["region", "n", "it's", "", "a/b", "é"]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([1.0, 2.5, -0.0, 0.1, 10**20, 1e20, 2**53 + 1, 9007199254740992.0]),
    st.sampled_from(["north", "", "é", 'say "hi"', "back\\slash", "1", "true"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(KEYS), children, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def json_text(draw: st.DrawFn, value: Any, depth: int = 0) -> str:
    """JSON text of a value written the many ways a client may write it (the store keeps the text as sent)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return draw(
            st.sampled_from([str(value), f"{value}.0", f"{value}e0"] if abs(value) < 10**15 else [str(value)])
        )
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "0"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=draw(st.booleans()))
    space = draw(st.sampled_from(["", " ", "\n  "]))
    if isinstance(value, list):
        return "[" + f",{space}".join(draw(json_text(v, depth + 1)) for v in value) + "]"
    pairs: list[tuple[str, str]] = [(k, draw(json_text(v, depth + 1))) for k, v in value.items()]
    twice = draw(st.booleans())
    if pairs and twice:  # the same key twice: Python keeps the last
        key = draw(st.sampled_from([k for k, _ in pairs]))
        earlier = draw(json_text(draw(SCALARS), depth + 1))
        pairs.insert(0, (key, earlier))
    return "{" + f",{space}".join(f"{json.dumps(k)}:{space}{v}" for k, v in pairs) + "}"


@st.composite
def calls(draw: st.DrawFn) -> str:
    lead = draw(st.sampled_from(["", "", " ", "\n\t"]))  # stored as sent, whitespace and all
    if draw(st.integers(0, 3)) == 0:
        return lead + draw(json_text(draw(VALUES)))
    return lead + draw(json_text(draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4))))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    expected=st.dictionaries(st.sampled_from(KEYS), VALUES, min_size=1, max_size=3),
    texts=st.lists(calls(), min_size=1, max_size=8),
    data=st.data(),
)
def test_sql_argument_matching_equals_python(
    expected: dict[str, Any], texts: list[str], data: st.DataObject
) -> None:
    # Calls written from the spec itself (with more keys, written another way) match more often than not.
    extra = data.draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=2))
    texts = [*texts, data.draw(json_text({**extra, **expected})), data.draw(json_text({**expected, **extra}))]
    con = duckdb.connect()
    con.execute("CREATE TABLE calls (i INTEGER, arguments JSON)")
    con.executemany("INSERT INTO calls VALUES (?, ?)", list(enumerate(texts)))
    rows = con.execute(f"SELECT i, {subset(expected, 'arguments')} FROM calls ORDER BY i").fetchall()
    assert [matched for _, matched in rows] == [matches_subset(expected, json.loads(t)) for t in texts]


# ---- generated histories and specs -----------------------------------------------------------------

NAMES = st.sampled_from(TOOLS)
FLAGS = st.sampled_from(
    [{}, {}, {"error": True}, {"paused": True}, {"from_history": True}, {"error": True, "paused": True}]
)


@st.composite
def items(draw: st.DrawFn) -> Call | Ask:
    if draw(st.integers(0, 5)) == 0:
        return Ask(
            draw(NAMES),
            {"region": "north"},
            call_id=draw(st.sampled_from([None, "c1", "c2"])),
            depth=draw(st.integers(0, 2)),
        )
    return Call(
        draw(st.sampled_from([*TOOLS, ""])),
        draw(st.one_of(calls(), st.sampled_from([None, "not json"]))),
        depth=draw(st.integers(0, 2)),
        duration_ms=draw(st.sampled_from([0.5, 10.0, 10.5, 700.0, 2500.123456])),
        call_id=draw(st.sampled_from([None, "c1", "c2"])),
        requested=draw(st.booleans()),
        **draw(FLAGS),
    )


PLAN = st.builds(
    RunPlan,
    st.lists(items(), max_size=5).map(tuple),
    task=st.sampled_from(["task-a", "task-b", None]),
    attributes=st.sampled_from([{}, {"tier": "gold"}, {"tier": 1}]),
)
BOUNDS = st.sampled_from([5, 10, 10.5, 600, 1000.0, 0.001])


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    fields: dict[str, Any] = {"name": "generated"}
    if draw(st.booleans()):
        fields["expected_tools"] = draw(st.lists(NAMES, min_size=1, max_size=3))
    if draw(st.booleans()):
        argument_specs = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=2)
        fields["arguments"] = draw(
            st.dictionaries(
                NAMES,
                argument_specs | st.lists(argument_specs, min_size=1, max_size=2),
                min_size=1,
                max_size=2,
            )
        )
    if draw(st.booleans()):
        fields["latency"] = {
            "max_ms": draw(st.dictionaries(st.sampled_from([*TOOLS, "*"]), BOUNDS, min_size=1, max_size=3))
        }
    for key, options in (
        ("allow_additional", [True, False]),
        ("strict_counts", ["executions", "attempts"]),
        ("scope", ["all", "leader"]),
        ("forbidden_tools", [["notify"], ["it's", "quote"]]),
        ("select", [{"task": "task-a"}, {"tier": ["gold", 1]}, {"service.name": "shop", "task": ["task-b"]}]),
    ):
        if draw(st.booleans()):
            fields[key] = draw(st.sampled_from(options))
    try:
        return Spec.model_validate(fields)
    except ValidationError:
        assume(False)
        raise


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(plans=st.lists(PLAN, min_size=1, max_size=6), drawn=st.lists(specs(), min_size=1, max_size=4))
def test_generated_histories_and_specs(
    tmp_path_factory: pytest.TempPathFactory, plans: list[RunPlan], drawn: list[Spec]
) -> None:
    path = tmp_path_factory.mktemp("generated") / "history.duckdb"
    build_history(path, plans)
    con = duckdb.connect(str(path))
    try:
        assert_same_verdicts(con, _named(drawn))
    finally:
        con.close()


def test_bfcl_mode_is_judged_in_python_and_agrees(connection: duckdb.DuckDBPyConnection) -> None:
    """`normalize: bfcl` lives only in argument rules, which SQL does not compile: set-based scoring
    hands those specs to the Python judge, whose verdicts it returns unchanged."""
    rules = {"region": {"any_of": ["North", ""]}, "n": {"any_of": [1.0], "type": "float", "optional": True}}
    bfcl = [
        spec(normalize="bfcl", argument_rules={"quote": {"values": rules}}),
        spec(normalize="bfcl", argument_rules={"quote": {"mode": "exact", "values": rules}}),
        spec(
            normalize="bfcl",
            expected_tools=["lookup"],
            trajectory={"mode": "superset", "tools": [{"tool": "quote", "values": rules}]},
        ),
    ]
    assert all(not_compiled(s) in ("argument_rules", "trajectory") for s in bfcl)
    verdicts = assert_same_verdicts(connection, _named(bfcl))
    assert {v.label for v in verdicts} == {"pass", "fail"}

"""The migration notes of docs/checks.md ("Migrating from DeepEval, Ragas and Mastra"), held to the
peers' own code: for each option, a handful of cases are scored by DeepEval 4.3.1's
ToolCorrectnessMetric or Ragas 0.4.3's ToolCallAccuracy / ToolCallF1 in process (no model: these
metrics are computed in code), and the same calls go through the real path (OTel SDK → OTLP/HTTP →
`tracescore serve --specs` → DuckDB → verdict) judged by the spec the notes give. Outcomes must be
equal, scores too where the notes say so; the documented deliberate differences must show as
documented.

The peers cannot join tracescore's test extra: pip answers ResolutionImpossible (`pip install --dry-run
-e .[test] deepeval==4.3.1 ragas==0.4.3`). openai-agents 0.24.0 (pinned in the extra) needs openai >=3,<4;
ragas 0.4.3 needs instructor, whose releases up to 1.16.0 need openai <3, and 1.17.0, which allows
openai 3, caps jiter below 0.15, which only openai 3.0-3.3 accept (3.4 on need jiter >= 0.16).
So they run in their own virtualenv, built from
tests/scoring/peers/requirements.txt (pinned) beside the framework cells' virtualenvs, on first use
when TRACESCORE_PEER_TRANSLATION=1, and reused while the pins are unchanged; without it the tests skip.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests._otel import provider
from tests._server import ServeProcess
from tests.frameworks.matrix import venv_root
from tests.scoring.checks.test_spec_parity_e2e import Emitter

PEERS = Path(__file__).resolve().parent / "peers"
REQUIREMENTS = PEERS / "requirements.txt"


def _peer_python() -> Path | None:
    """The peers' virtualenv's python: cached by the requirements' digest, built when asked."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    venv = venv_root() / f"peers-{digest}"
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    if os.environ.get("TRACESCORE_PEER_TRANSLATION") != "1":
        return None
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    install = [
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-r",
        str(REQUIREMENTS),
    ]
    if subprocess.run(install, check=False, timeout=1200).returncode != 0:
        return None
    (venv / ".complete").write_text("")
    return python


@dataclass
class Case:
    """One peer option on one run: what the peer is given, and the spec the notes translate it to."""

    name: str
    peer: str  # deepeval | ragas | ragas-f1
    options: dict[str, Any]
    expected: list[dict[str, Any]]
    called: list[dict[str, Any]]  # each {name, args, output?, error?}
    spec: dict[str, Any]
    same: str = "verdict"  # verdict | score | differs (a deliberate difference: the verdicts disagree)
    extra: dict[str, Any] = field(default_factory=dict)


def c(name: str, args: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    return {"name": name, "args": args or {}, **more}


def eq(value: Any) -> dict[str, Any]:
    return {"any_of": [value]}


SEARCH_QUOTE_REFUND = [c("search"), c("quote"), c("refund")]
EXPECTED_NAMES = {"expected_tools": ["search", "quote", "refund"]}
QUOTE_REF = {"sku": "A-1", "qty": 2}
QUOTE_EXACT = {
    "argument_rules": {
        "quote": {"mode": "exact", "score": "per_key", "values": {k: eq(v) for k, v in QUOTE_REF.items()}}
    }
}
BALANCE_OUT = {
    "trajectory": {
        "mode": "superset",
        "tools": [
            {"tool": "balance", "values": {"account": eq("A")}, "result": {"value": eq({"balance": 150})}}
        ],
    }
}
RAGAS_REF = [c("search", {"q": "paris"}), c("weather", {"city": "Paris"})]
RAGAS_ITEMS = [{"tool": t["name"], "values": {k: eq(v) for k, v in t["args"].items()}} for t in RAGAS_REF]
RAGAS_EXACT_ITEMS = [{**item, "mode": "exact"} for item in RAGAS_ITEMS]
ORDERED = [c("search"), c("quote"), c("refund")]

CASES = [
    # threshold (0.5 by default): DeepEval's default score is expected names found / expected.
    Case(
        "de-threshold-pass",
        "deepeval",
        {},
        SEARCH_QUOTE_REFUND,
        [c("search"), c("quote")],
        {**EXPECTED_NAMES, "pass_threshold": 0.5},
        "score",
    ),
    Case(
        "de-threshold-fail",
        "deepeval",
        {},
        SEARCH_QUOTE_REFUND,
        [c("search")],
        {**EXPECTED_NAMES, "pass_threshold": 0.5},
        "score",
    ),
    Case(
        "de-threshold-all",
        "deepeval",
        {"threshold": 0.9},
        SEARCH_QUOTE_REFUND,
        [c("refund"), c("quote"), c("search"), c("log")],
        {**EXPECTED_NAMES, "pass_threshold": 0.9},
        "score",
    ),
    # strict_mode: every check must hold.
    Case(
        "de-strict-fail",
        "deepeval",
        {"strict_mode": True},
        SEARCH_QUOTE_REFUND,
        [c("search"), c("quote")],
        EXPECTED_NAMES,
    ),
    Case(
        "de-strict-pass",
        "deepeval",
        {"strict_mode": True},
        SEARCH_QUOTE_REFUND,
        [c("quote"), c("search"), c("refund")],
        EXPECTED_NAMES,
    ),
    # INPUT_PARAMETERS: equal keys / union of keys = argument_rules exact per_key.
    Case(
        "de-params-third",
        "deepeval",
        {"evaluation_params": ["INPUT_PARAMETERS"]},
        [c("quote", QUOTE_REF)],
        [c("quote", {"sku": "A-1", "qty": 3, "note": "gift"})],
        {**QUOTE_EXACT, "pass_threshold": 0.5},
        "score",
    ),
    Case(
        "de-params-half",
        "deepeval",
        {"evaluation_params": ["INPUT_PARAMETERS"]},
        [c("quote", QUOTE_REF)],
        [c("quote", {"sku": "A-1", "qty": 3})],
        {**QUOTE_EXACT, "pass_threshold": 0.5},
        "score",
    ),
    Case(
        "de-params-all",
        "deepeval",
        {"evaluation_params": ["INPUT_PARAMETERS"]},
        [c("quote", QUOTE_REF)],
        [c("search", {"q": "x"}), c("quote", QUOTE_REF)],
        {**QUOTE_EXACT, "pass_threshold": 0.5},
        "score",
    ),
    # INPUT_PARAMETERS + OUTPUT at threshold 1: a result bound to its call.
    Case(
        "de-output-ok",
        "deepeval",
        {"strict_mode": True, "evaluation_params": ["INPUT_PARAMETERS", "OUTPUT"]},
        [c("balance", {"account": "A"}, output={"balance": 150})],
        [
            c("balance", {"account": "B"}, output={"balance": 5}),
            c("balance", {"account": "A"}, output={"balance": 150}),
        ],
        BALANCE_OUT,
    ),
    Case(
        "de-output-other-call",
        "deepeval",
        {"strict_mode": True, "evaluation_params": ["INPUT_PARAMETERS", "OUTPUT"]},
        [c("balance", {"account": "A"}, output={"balance": 150})],
        [
            c("balance", {"account": "A"}, output={"balance": 5}),
            c("balance", {"account": "B"}, output={"balance": 150}),
        ],
        BALANCE_OUT,
    ),
    # should_exact_match: the same names in order, nothing else.
    Case(
        "de-exact-ok",
        "deepeval",
        {"should_exact_match": True},
        ORDERED,
        ORDERED,
        {"trajectory": {"mode": "strict", "tools": ["search", "quote", "refund"]}},
    ),
    Case(
        "de-exact-swapped",
        "deepeval",
        {"should_exact_match": True},
        ORDERED,
        [c("quote"), c("search"), c("refund")],
        {"trajectory": {"mode": "strict", "tools": ["search", "quote", "refund"]}},
    ),
    Case(
        "de-exact-extra",
        "deepeval",
        {"should_exact_match": True},
        ORDERED,
        [c("search"), c("log"), c("quote"), c("refund")],
        {"trajectory": {"mode": "strict", "tools": ["search", "quote", "refund"]}},
    ),
    # should_consider_ordering at threshold 1: a subsequence.
    Case(
        "de-order-between",
        "deepeval",
        {"should_consider_ordering": True, "strict_mode": True},
        ORDERED,
        [c("search"), c("log"), c("quote"), c("refund")],
        {"trajectory": {"mode": "subsequence", "tools": ["search", "quote", "refund"]}},
    ),
    Case(
        "de-order-bad",
        "deepeval",
        {"should_consider_ordering": True, "strict_mode": True},
        ORDERED,
        [c("quote"), c("search"), c("refund")],
        {"trajectory": {"mode": "subsequence", "tools": ["search", "quote", "refund"]}},
    ),
    # Deliberate differences.
    Case(
        "de-refused",
        "deepeval",
        {"strict_mode": True},
        [c("refund")],
        [c("refund", error=True)],
        {"expected_tools": ["refund"]},
        "differs",
    ),
    Case(
        "de-true-is-1",
        "deepeval",
        {"strict_mode": True, "evaluation_params": ["INPUT_PARAMETERS"]},
        [c("flag", {"on": 1})],
        [c("flag", {"on": True})],
        {"argument_rules": {"flag": {"mode": "exact", "values": {"on": eq(1)}}}},
        "differs",
    ),
    Case(
        "de-repeated",
        "deepeval",
        {"strict_mode": True, "evaluation_params": ["INPUT_PARAMETERS"]},
        [c("f", {"x": 1}), c("f", {"x": 1})],
        [c("f", {"x": 1}), c("f", {"x": 1})],
        {"trajectory": {"mode": "superset", "tools": [{"tool": "f", "values": {"x": eq(1)}}] * 2}},
        "differs",
    ),
    # Ragas ToolCallAccuracy(strict_order=True): trajectory strict, subset items.
    Case(
        "ra-strict-ok",
        "ragas",
        {"strict_order": True},
        RAGAS_REF,
        [c("search", {"q": "paris", "lang": "fr"}), c("weather", {"city": "Paris"})],
        {"trajectory": {"mode": "strict", "tools": RAGAS_ITEMS}},
    ),
    Case(
        "ra-strict-swapped",
        "ragas",
        {"strict_order": True},
        RAGAS_REF,
        [c("weather", {"city": "Paris"}), c("search", {"q": "paris"})],
        {"trajectory": {"mode": "strict", "tools": RAGAS_ITEMS}},
    ),
    Case(
        "ra-strict-wrong-arg",
        "ragas",
        {"strict_order": True},
        RAGAS_REF,
        [c("search", {"q": "paris"}), c("weather", {"city": "Lyon"})],
        {"trajectory": {"mode": "strict", "tools": RAGAS_ITEMS}},
    ),
    # strict_order=False: unordered.
    Case(
        "ra-any-order-ok",
        "ragas",
        {"strict_order": False},
        RAGAS_REF,
        [c("weather", {"city": "Paris"}), c("search", {"q": "paris"})],
        {"trajectory": {"mode": "unordered", "tools": RAGAS_ITEMS}},
    ),
    Case(
        "ra-any-order-missing",
        "ragas",
        {"strict_order": False},
        RAGAS_REF,
        [c("weather", {"city": "Paris"})],
        {"trajectory": {"mode": "unordered", "tools": RAGAS_ITEMS}},
    ),
    # The arg score: matched reference keys / reference keys = argument_rules subset per_key.
    Case(
        "ra-arg-score",
        "ragas",
        {"strict_order": True},
        [c("quote", {"sku": "A-1", "qty": 2, "region": "north"})],
        [c("quote", {"sku": "A-1", "qty": 3, "region": "north", "note": "gift"})],
        {
            "argument_rules": {
                "quote": {
                    "score": "per_key",
                    "values": {"sku": eq("A-1"), "qty": eq(2), "region": eq("north")},
                }
            },
            "pass_threshold": 0.5,
        },
        "score",
    ),
    # ToolCallF1 at 1: unordered, exact items.
    Case(
        "f1-ok",
        "ragas-f1",
        {},
        RAGAS_REF,
        [c("weather", {"city": "Paris"}), c("search", {"q": "paris"})],
        {"trajectory": {"mode": "unordered", "tools": RAGAS_EXACT_ITEMS}},
    ),
    Case(
        "f1-extra-call",
        "ragas-f1",
        {},
        RAGAS_REF,
        [*RAGAS_REF, c("log")],
        {"trajectory": {"mode": "unordered", "tools": RAGAS_EXACT_ITEMS}},
    ),
    Case(
        "f1-extra-key",
        "ragas-f1",
        {},
        RAGAS_REF,
        [c("search", {"q": "paris", "lang": "fr"}), c("weather", {"city": "Paris"})],
        {"trajectory": {"mode": "unordered", "tools": RAGAS_EXACT_ITEMS}},
    ),
    # Deliberate differences: str() equality, a repeated call counted once, a refused call.
    Case(
        "ra-str-equal",
        "ragas",
        {"strict_order": True},
        [c("quote", {"qty": 1})],
        [c("quote", {"qty": "1"})],
        {"trajectory": {"mode": "strict", "tools": [{"tool": "quote", "values": {"qty": eq(1)}}]}},
        "differs",
    ),
    Case(
        "f1-repeated",
        "ragas-f1",
        {},
        [c("search", {"q": "paris"})],
        [c("search", {"q": "paris"}), c("search", {"q": "paris"})],
        {
            "trajectory": {
                "mode": "unordered",
                "tools": [{"tool": "search", "values": {"q": eq("paris")}, "mode": "exact"}],
            }
        },
        "differs",
    ),
    Case(
        "ra-refused",
        "ragas",
        {"strict_order": True},
        [c("search", {"q": "paris"})],
        [c("search", {"q": "paris"}, error=True)],
        {"trajectory": {"mode": "strict", "tools": [{"tool": "search", "values": {"q": eq("paris")}}]}},
        "differs",
    ),
]


@pytest.fixture(scope="module")
def peer_scores() -> dict[str, dict[str, Any]]:
    python = _peer_python()
    if python is None:
        pytest.skip(
            "the peers' virtualenv (tests/scoring/peers/requirements.txt) is not built: "
            "run once with TRACESCORE_PEER_TRANSLATION=1 (needs the package registry)"
        )
    cases = [
        {"peer": k.peer, "options": k.options, "expected": k.expected, "called": k.called} for k in CASES
    ]
    # The peers are handed every listed call, refused ones too: their inputs carry no outcome.
    run = subprocess.run(
        [str(python), str(PEERS / "peer_scores.py")],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return {k.name: score for k, score in zip(CASES, json.loads(run.stdout), strict=True)}


@pytest.fixture(scope="module")
def verdicts(
    tmp_path_factory: pytest.TempPathFactory, peer_scores: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("peers")
    spec_file = directory / "specs.yaml"
    spec_file.write_text(
        yaml.safe_dump([{"name": k.name, "select": {"task": k.name}, **k.spec} for k in CASES])
    )
    server = ServeProcess(directory / "t.duckdb", extra_args=("--specs", str(spec_file))).start()
    try:
        tp = provider(server, "http")
        emit = Emitter(tp.get_tracer("tests.peers"))
        for case in CASES:
            with emit.run(case.name, case.name) as e:
                for i, call in enumerate(case.called):
                    output = call.get("output")
                    result = json.dumps(output) if output is not None else None
                    e.tool(
                        call["name"],
                        call["args"],
                        10 + 20 * i,
                        20 + 20 * i,
                        result=result,
                        error=call.get("error", False),
                    )
        tp.force_flush()
        tp.shutdown()
    finally:
        assert server.stop() == 0, server.log()
    got = {
        json.loads(row[0])["spec"]: json.loads(row[0]) for row in server.query("SELECT verdict FROM verdicts")
    }
    assert set(got) == {k.name for k in CASES}, server.log()
    yield got


@pytest.mark.parametrize("case", [k for k in CASES if k.same != "differs"], ids=lambda k: k.name)
def test_the_translated_spec_gives_the_peers_outcome(
    case: Case, peer_scores: dict[str, Any], verdicts: dict[str, Any]
) -> None:
    peer, verdict = peer_scores[case.name], verdicts[case.name]
    success = peer["success"]
    if case.peer != "deepeval" and "pass_threshold" in case.spec:
        # Ragas has no threshold of its own: its user compares the score with one, as the spec does.
        success = peer["score"] >= case.spec["pass_threshold"]
    assert verdict["passed"] is success, (peer, verdict["reason"])
    if case.same == "score":
        assert verdict["value"] == pytest.approx(peer["score"]), (peer, verdict["reason"])


@pytest.mark.parametrize("case", [k for k in CASES if k.same == "differs"], ids=lambda k: k.name)
def test_a_documented_difference_shows_as_documented(
    case: Case, peer_scores: dict[str, Any], verdicts: dict[str, Any]
) -> None:
    """Refused calls and `str()`/Python equality pass the peers and fail here; a repeated identical call
    fails DeepEval and passes here; ToolCallF1 counts a repeated call once, `unordered` needs each."""
    peer, verdict = peer_scores[case.name], verdicts[case.name]
    assert verdict["passed"] is not peer["success"], (peer, verdict["reason"])
    if case.name == "de-repeated":
        assert (peer["score"], verdict["passed"]) == (0, True)  # 0.5 under strict_mode becomes 0
    elif case.name == "f1-repeated":
        assert (peer["score"], verdict["passed"]) == (1.0, False)
    else:
        assert (peer["success"], verdict["passed"]) == (True, False)

"""docs/checks.md cannot rot: every registered check kind, gate and spec key (nested ones too) is
documented there, every example spec in it loads, and every example verdict in it is JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

import scoring  # noqa: F401  (registers the built-in checks)
from scoring import CHECKS, Spec
from scoring.spec.check_models import ArgumentRules, CallCount, Parallel, Rule, Trajectory, TrajectoryItem
from scoring.spec.specs import CATALOGUE_KEYS, Latency

DOCS = Path(__file__).resolve().parents[3] / "docs"
PAGE = (DOCS / "checks.md").read_text()
GATES = ("strict", "forbidden_tools")
BUILT_IN_ELSEWHERE = ("expected_tool", "arguments", "latency")  # documented in docs/scoring.md


def _built_in_kinds() -> list[str]:
    # Only tracescore's own: a plugin registered by another test module is not ours to document.
    return sorted(kind for kind, check in CHECKS.items() if check.__module__.startswith("scoring."))


def _table(marker: str) -> list[list[str]]:
    """The rows (header left out) of the first markdown table after `marker` in the page."""
    rows: list[list[str]] = []
    for line in PAGE.split(marker, 1)[1].splitlines():
        if line.startswith("|"):
            if not line.startswith("|---"):
                rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
        elif rows:
            break
    return rows[1:]


def _ticked(text: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", text))


def _keys(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


@pytest.mark.parametrize("kind", [*_built_in_kinds(), *GATES])
def test_every_check_kind_and_gate_is_in_the_key_table(kind: str) -> None:
    kinds = set().union(*(_ticked(row[2]) for row in _table("## Every spec key")))
    assert kind in kinds, f"docs/checks.md's key table does not report kind {kind!r}"


@pytest.mark.parametrize("kind", [k for k in _built_in_kinds() if k not in BUILT_IN_ELSEWHERE])
def test_every_catalogue_kind_has_its_own_section(kind: str) -> None:
    headings = [line for line in PAGE.splitlines() if line.startswith("## ")]
    assert any(f"`{kind}`" in heading for heading in headings), f"no `## ` section for {kind!r}"


def test_built_in_kinds_documented_elsewhere_are_in_scoring_md() -> None:
    scoring_md = (DOCS / "scoring.md").read_text()
    for kind in BUILT_IN_ELSEWHERE:
        assert f"`{kind}`" in scoring_md
    assert "checks.md" in scoring_md  # the key table there points here


@pytest.mark.parametrize("key", sorted(_keys(Spec)))
def test_every_spec_key_is_documented(key: str) -> None:
    keys = {row[0].strip("`") for row in _table("## Every spec key")}
    assert key in keys, f"docs/checks.md does not document spec key {key!r}"


NESTED = {
    "`latency`": Latency,
    "`argument_rules.TOOL`": ArgumentRules,
    "a RULE": Rule,
    "`calls.TOOL`": CallCount,
    "`trajectory`": Trajectory,
    "a trajectory ITEM": TrajectoryItem,
    "`parallel`": Parallel,
}


@pytest.mark.parametrize("where", list(NESTED))
def test_every_nested_key_is_documented(where: str) -> None:
    documented = {row[0]: _ticked(row[1]) for row in _table("Keys inside the catalogue's values")}
    missing = _keys(NESTED[where]) - documented.get(where, set())
    assert not missing, f"docs/checks.md does not document {sorted(missing)} under {where}"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE, flags=re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("text", _blocks("yaml"), ids=lambda t: t.split("\n", 1)[0])
def test_every_example_spec_loads(text: str) -> None:
    Spec.model_validate(yaml.safe_load(text))


@pytest.mark.parametrize("text", _blocks("json"), ids=lambda t: t[:40])
def test_every_example_verdict_is_json_of_a_documented_kind(text: str) -> None:
    data = json.loads(text)
    kinds = {data.get("kind")} | {g["kind"] for g in data.get("gates", [])}
    assert kinds - {None} <= {*_built_in_kinds(), *GATES}


def test_every_example_spec_key_is_exercised() -> None:
    """Each catalogue key has at least one example spec using it."""
    used = set().union(*(yaml.safe_load(text).keys() for text in _blocks("yaml")))
    assert set(CATALOGUE_KEYS) - used == set()

"""Spec files (issue 4 "Specs", DESIGN §6): loading, every rejection and its message, the fingerprint."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from scoring import Spec, SpecError, load_specs


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def rejection(path: Path) -> str:
    with pytest.raises(SpecError) as caught:
        load_specs([path])
    return str(caught.value)


def spec(**fields: Any) -> Spec:
    return Spec.model_validate({"name": "s", **fields})


# --- loading ---------------------------------------------------------------------------------------


def test_yaml_file_with_one_spec(tmp_path: Path) -> None:
    path = write(
        tmp_path / "one.yaml",
        "name: dispatch\n"
        "select: {service.name: shop-agent, task: direct-lookup}\n"
        "expected_tools: [lookup_shipping_cutoff]\n"
        "arguments:\n"
        "  quote_shipping_cutoff: {region: north, service: priority}\n"
        "allow_additional: false\n"
        "strict_counts: attempts\n"
        'latency: {max_ms: {lookup_shipping_cutoff: 500, "*": 2000}}\n',
    )
    [loaded] = load_specs([path])
    assert loaded.name == "dispatch"
    assert loaded.select == {"service.name": "shop-agent", "task": "direct-lookup"}
    assert loaded.expected_tools == ["lookup_shipping_cutoff"]
    assert loaded.argument_specs("quote_shipping_cutoff") == [{"region": "north", "service": "priority"}]
    assert loaded.allows_additional is False
    assert loaded.counts_attempts is True
    assert loaded.latency is not None
    assert loaded.latency.max_ms == {"lookup_shipping_cutoff": 500, "*": 2000}
    assert (loaded.scope, loaded.profile) == ("all", "default")


def test_yaml_file_with_several_documents(tmp_path: Path) -> None:
    path = write(
        tmp_path / "many.yml",
        "name: a\nexpected_tools: [x]\n---\nname: b\nexpected_tools: [y]\n---\n",
    )
    assert [s.name for s in load_specs([path])] == ["a", "b"]


def test_yaml_document_holding_a_list(tmp_path: Path) -> None:
    path = write(
        tmp_path / "list.yaml", "- {name: a, expected_tools: [x]}\n- {name: b, expected_tools: [y]}\n"
    )
    assert [s.name for s in load_specs([path])] == ["a", "b"]


def test_json_object(tmp_path: Path) -> None:
    path = write(tmp_path / "one.json", json.dumps({"name": "a", "arguments": {"x": {"k": 1}}}))
    [loaded] = load_specs([path])
    assert loaded.argument_specs("x") == [{"k": 1}]


def test_json_array(tmp_path: Path) -> None:
    specs = [{"name": "a", "expected_tools": ["x"]}, {"name": "b", "expected_tools": ["y"]}]
    path = write(tmp_path / "many.json", json.dumps(specs))
    assert [s.name for s in load_specs([path])] == ["a", "b"]


def test_directory_of_spec_files_in_name_order(tmp_path: Path) -> None:
    write(tmp_path / "specs" / "b.yaml", "name: b\nexpected_tools: [x]\n")
    write(tmp_path / "specs" / "a.json", '{"name": "a", "expected_tools": ["x"]}')
    write(tmp_path / "specs" / "nested" / "c.yml", "name: c\nexpected_tools: [x]\n")
    write(tmp_path / "specs" / "README.md", "not a spec")
    assert [s.name for s in load_specs([tmp_path / "specs"])] == ["a", "b", "c"]


def test_several_paths_are_concatenated(tmp_path: Path) -> None:
    first = write(tmp_path / "1.yaml", "name: a\nexpected_tools: [x]\n")
    second = write(tmp_path / "2.json", '[{"name": "b", "expected_tools": ["x"]}]')
    assert [s.name for s in load_specs([first, second])] == ["a", "b"]


# --- rejections: one message naming the file, the spec, the key and the fix -------------------------


def test_bare_string_expected_tools_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", "name: lookup\nexpected_tools: search\n")
    message = rejection(path)
    assert str(path) in message
    assert "spec 'lookup'" in message
    assert "expected_tools" in message
    assert "bare string 'search'" in message
    assert "[search]" in message  # the fix


def test_empty_argument_spec_list_is_rejected_by_default(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", "name: lookup\nexpected_tools: [search]\narguments: {search: []}\n")
    message = rejection(path)
    assert str(path) in message
    assert "spec 'lookup'" in message
    assert "arguments for 'search' is an empty list" in message
    assert "or {} for 'any clean call'" in message


def test_spec_with_no_checks_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", "name: nothing\nallow_additional: false\n")
    message = rejection(path)
    assert str(path) in message
    assert "spec 'nothing'" in message
    assert "checks nothing" in message
    assert "add expected_tools, arguments or latency" in message


@pytest.mark.parametrize("fields", [{"expected_tools": []}, {"arguments": {}}])
def test_empty_expectations_check_nothing_in_the_default_profile(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="checks nothing"):
        spec(**fields)


def test_misspelt_key_is_rejected_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", "name: lookup\nexpected_tool: [search]\n")
    message = rejection(path)
    assert str(path) in message
    assert "spec 'lookup'" in message
    assert "expected_tool: unknown key" in message
    assert "did you mean 'expected_tools'?" in message


def test_misspelt_latency_key_names_the_latency_keys(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", "name: slow\nlatency: {max: {search: 5}}\n")
    message = rejection(path)
    assert "spec 'slow'" in message
    assert "latency.max: unknown key; did you mean 'max_ms'? known keys are max_ms" in message


def test_invalid_yaml_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", "name: x\nexpected_tools: [search\n")
    message = rejection(path)
    assert message.startswith(f"{path}: not valid YAML:")


def test_invalid_json_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path / "s.json", '{"name": "x",')
    assert rejection(path).startswith(f"{path}: not valid JSON:")


def test_duplicate_spec_names_are_rejected_naming_both_files(tmp_path: Path) -> None:
    first = write(tmp_path / "1.yaml", "name: same\nexpected_tools: [x]\n")
    second = write(tmp_path / "2.yaml", "name: same\nexpected_tools: [y]\n")
    with pytest.raises(SpecError) as caught:
        load_specs([first, second])
    message = str(caught.value)
    assert f"spec 'same' in {first}, {second}" in message
    assert "unique name" in message


def test_duplicate_spec_names_within_one_file(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.yaml", "name: same\nexpected_tools: [x]\n---\nname: same\nexpected_tools: [y]\n"
    )
    assert f"spec 'same' in {path}, {path}" in rejection(path)


def test_a_spec_that_is_not_a_mapping_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", "- {name: a, expected_tools: [x]}\n- just a string\n")
    message = rejection(path)
    assert str(path) in message
    assert "spec #2: a spec must be a mapping" in message


@pytest.mark.parametrize("bound", ["0", "-5", ".nan"])
def test_latency_bound_must_be_positive(tmp_path: Path, bound: str) -> None:
    path = write(tmp_path / "s.yaml", f"name: slow\nlatency: {{max_ms: {{search: {bound}}}}}\n")
    message = rejection(path)
    assert str(path) in message
    assert "spec 'slow'" in message
    assert "latency.max_ms: max_ms for 'search' must be greater than 0" in message


def test_empty_latency_bounds_are_rejected() -> None:
    with pytest.raises(ValueError, match="max_ms is empty"):
        spec(latency={"max_ms": {}})


def test_yaml_dates_in_argument_specs_are_rejected(tmp_path: Path) -> None:
    """YAML turns 2024-01-01 into a date, which no JSON argument can ever equal."""
    path = write(tmp_path / "s.yaml", "name: book\narguments: {book: {day: 2024-01-01}}\n")
    message = rejection(path)
    assert "spec 'book'" in message
    assert "arguments: book.day:" in message
    assert "quote dates" in message
    # quoted, it is a string and loads
    write(path, "name: book\narguments: {book: {day: '2024-01-01'}}\n")
    assert load_specs([path])[0].argument_specs("book") == [{"day": "2024-01-01"}]


@pytest.mark.parametrize(
    "fields", [{"expected_tools": ["a", ""]}, {"arguments": {"": {}}}], ids=["expected_tools", "arguments"]
)
def test_empty_tool_names_are_rejected(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="tool names must not be empty"):
        spec(**fields)


def test_every_problem_of_a_spec_is_in_the_one_message(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", "name: x\nexpected_tools: search\nscope: members\n")
    message = rejection(path)
    assert "expected_tools:" in message
    assert "scope:" in message


def test_file_holding_no_spec_and_missing_path_are_rejected(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.yaml", "")
    assert rejection(empty) == f"{empty}: holds no spec"
    assert "no such file or directory" in rejection(tmp_path / "absent.yaml")
    (tmp_path / "nothing").mkdir()
    assert "holds no .yaml, .yml or .json spec file" in rejection(tmp_path / "nothing")


def test_one_broken_spec_stops_everything(tmp_path: Path) -> None:
    good = write(tmp_path / "a.yaml", "name: good\nexpected_tools: [x]\n")
    bad = write(tmp_path / "b.yaml", "name: bad\nexpected_tools: x\n")
    with pytest.raises(SpecError):
        load_specs([good, bad])


# --- profile reliability_eval ------------------------------------------------------------------------


def test_reliability_eval_accepts_no_tools_allowed() -> None:
    loaded = spec(profile="reliability_eval", expected_tools=[])
    assert loaded.expected_tools == []
    assert loaded.allows_additional is False
    assert loaded.counts_attempts is True


def test_reliability_eval_accepts_an_empty_spec_list() -> None:
    loaded = spec(profile="reliability_eval", arguments={"search": []})
    assert loaded.argument_specs("search") == []


def test_reliability_eval_with_no_expectations_loads_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Agno's ReliabilityEval passes every run when it expects nothing (agno-scorer-semantics.md R2):
    the parity profile accepts such a spec, and says on load that it checks nothing."""
    path = write(tmp_path / "vacuous.yaml", "name: anything-goes\nprofile: reliability_eval\n")
    with caplog.at_level("WARNING", logger="tracescore.specs"):
        [loaded] = load_specs([path])
    assert loaded.checks_nothing is True
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            f"{path}: spec 'anything-goes': this spec checks nothing: under profile reliability_eval every "
            "run it selects passes, as Agno's ReliabilityEval does with no expected_tool_calls; add "
            "expected_tools (expected_tools: [] lets no tool run) or arguments",
        )
    ]


def test_a_reliability_eval_spec_that_expects_something_loads_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(
        tmp_path / "some.yaml",
        "name: none-allowed\nprofile: reliability_eval\nexpected_tools: []\n---\n"
        "name: one\nprofile: reliability_eval\nexpected_tools: [a]\n",
    )
    with caplog.at_level("WARNING", logger="tracescore.specs"):
        assert [s.checks_nothing for s in load_specs([path])] == [False, False]
    assert caplog.records == []


def test_the_default_profile_still_refuses_a_spec_with_no_expectations(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="checks nothing"):
        spec()
    with pytest.raises(ValueError, match="checks nothing"):
        spec(profile="default")
    assert "this spec checks nothing" in rejection(write(tmp_path / "empty.yaml", "name: nothing\n"))


def test_reliability_eval_rejects_latency_it_would_not_check() -> None:
    with pytest.raises(ValueError, match="latency is not checked by profile reliability_eval"):
        spec(profile="reliability_eval", expected_tools=["a"], latency={"max_ms": {"a": 5}})


def test_explicit_settings_override_the_profile_defaults() -> None:
    loaded = spec(
        profile="reliability_eval", expected_tools=["a"], allow_additional=True, strict_counts="executions"
    )
    assert (loaded.allows_additional, loaded.counts_attempts) == (True, False)
    default = spec(expected_tools=["a"])
    assert (default.allows_additional, default.counts_attempts) == (True, False)


# --- fingerprint -------------------------------------------------------------------------------------


def test_fingerprint_is_sha256_of_the_canonical_json() -> None:
    canonical = '{"expected_tools":["a","b"],"name":"s","profile":"default","scope":"all","select":{}}'
    assert spec(expected_tools=["b", "a"]).fingerprint == hashlib.sha256(canonical.encode()).hexdigest()


def test_fingerprint_ignores_key_order(tmp_path: Path) -> None:
    one = write(
        tmp_path / "1.yaml",
        "name: s\nexpected_tools: [a]\nallow_additional: false\narguments: {a: {x: 1, y: {p: 1, q: 2}}}\n",
    )
    two = write(
        tmp_path / "2.json",
        '{"arguments": {"a": {"y": {"q": 2, "p": 1}, "x": 1}}, "allow_additional": false,'
        ' "expected_tools": ["a"], "name": "s"}',
    )
    [first] = load_specs([one])
    [second] = load_specs([two])
    assert first.fingerprint == second.fingerprint


def test_fingerprint_ignores_order_and_duplicates_of_expected_tools() -> None:
    assert spec(expected_tools=["b", "a", "a"]).fingerprint == spec(expected_tools=["a", "b"]).fingerprint


BASE: dict[str, Any] = {
    "expected_tools": ["a"],
    "arguments": {"a": [{"x": 1}, {"y": 2}]},
    "latency": {"max_ms": {"a": 100}},
}


@pytest.mark.parametrize(
    "change",
    [
        {"name": "t"},
        {"arguments": {"a": [{"x": 2}, {"y": 2}]}},  # a value
        {"arguments": {"a": [{"x": "1"}, {"y": 2}]}},  # a value's type
        {"arguments": {"a": [{"y": 2}, {"x": 1}]}},  # argument-spec list order
        {"arguments": {"a": [{"x": 1}, {"y": 2}, {"x": 1}]}},  # a repeated argument spec
        {"arguments": {"a": [{"x": 1}, {"y": 2, "z": None}]}},  # a key whose value is null
        {"expected_tools": ["a", "b"]},
        {"allow_additional": False},
        {"allow_additional": True},  # explicit, even where it is the default
        {"strict_counts": "attempts"},
        {"latency": {"max_ms": {"a": 101}}},
        {"scope": "leader"},
        {"select": {"task": "t1"}},
    ],
)
def test_any_other_change_changes_the_fingerprint(change: dict[str, Any]) -> None:
    assert spec(**{**BASE, **change}).fingerprint != spec(**BASE).fingerprint


def test_profile_changes_the_fingerprint() -> None:
    assert (
        spec(expected_tools=["a"], profile="reliability_eval").fingerprint
        != spec(expected_tools=["a"]).fingerprint
    )


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("name: s\nexpected_tools: [a]\nallow_additional: 'no'\n", "allow_additional"),
        ("name: s\nlatency: {max_ms: {a: true}}\n", "latency.max_ms.a"),
        ("name: s\nlatency: {max_ms: {a: '5'}}\n", "latency.max_ms.a"),
    ],
)
def test_values_of_the_wrong_type_are_refused_not_coerced(tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path / "s.yaml", text)
    with pytest.raises(SpecError) as caught:
        load_specs([path])
    assert str(path) in str(caught.value) and key in str(caught.value)

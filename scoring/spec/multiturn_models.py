"""Spec models of the multi-turn checks (issue 21; docs/checks.md): rules on what a tool returned
(`results`), values that must flow from an earlier result into a later call's arguments (`flows`),
writes not repeated blindly after an error (`idempotent_writes`), and rules on the environment's
state snapshot at the end of a turn (`state`). Every model refuses unknown keys, like the spec itself.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from scoring.spec.check_models import ResultRule, check_tool_names

# A branch of a tagged union: pydantic puts the tag in an error's location, which the spec's messages
# leave out (scoring/spec/_messages.py), so no tool or key name can be mistaken for it.
UNION_TAG = "\x00"
_ONE, _MANY = f"{UNION_TAG}rule", f"{UNION_TAG}rules"

# `results.TOOL`: one rule, or a list of rules each met by a clean call of its own. Tagged, so a mistake
# in either form is reported once, in that form (not once per member of the union).
ResultRules = Annotated[
    Annotated[ResultRule, Tag(_ONE)] | Annotated[list[ResultRule], Tag(_MANY)],
    Discriminator(lambda value: _MANY if isinstance(value, list) else _ONE),
]

_FROM = re.compile(r"^(?P<tool>.+?)\.result(?:\.(?P<path>.+))?$")
_TO = re.compile(r"^(?P<tool>.+?)\.arguments\.(?P<path>.+)$")


def _path_ok(path: str | None) -> bool:
    return path is None or all(path.split("."))


class Flow(BaseModel):
    """`flows: [{from: TOOL.result[.PATH], to: TOOL.arguments.PATH}]`: every clean call of the `to`
    tool passes, at PATH, a value an earlier clean `from` execution returned."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, serialize_by_alias=True)

    source: str = Field(alias="from", min_length=1)
    target: str = Field(alias="to", min_length=1)

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        match = _FROM.match(value)
        if match is None or not _path_ok(match.group("path")):
            raise ValueError(
                f"from {value!r} is not TOOL.result or TOOL.result.PATH (create_folder.result.id)"
            )
        return value

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        match = _TO.match(value)
        if match is None or not _path_ok(match.group("path")):
            raise ValueError(f"to {value!r} is not TOOL.arguments.PATH (save_report.arguments.folder_id)")
        return value

    @property
    def source_tool(self) -> str:
        return _parts(_FROM, self.source)[0]

    @property
    def source_path(self) -> str | None:
        return _parts(_FROM, self.source)[1]

    @property
    def target_tool(self) -> str:
        return _parts(_TO, self.target)[0]

    @property
    def target_path(self) -> str:
        return _parts(_TO, self.target)[1] or ""

    @property
    def label(self) -> str:
        return f"{self.source} -> {self.target}"


def _parts(pattern: re.Pattern[str], text: str) -> tuple[str, str | None]:
    match = pattern.match(text)
    assert match is not None  # validated when the spec loaded
    return match.group("tool"), match.group("path")


class IdempotentWrites(BaseModel):
    """`idempotent_writes: {tools, reads}`: no write of `tools` is repeated with the same arguments after
    it errored unless a clean execution of one of `reads` came in between."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: list[str] = Field(min_length=1)
    reads: list[str] = Field(default_factory=list)

    @field_validator("tools", "reads", mode="before")
    @classmethod
    def _not_a_bare_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(f"must be a list of tool names, not the bare string {value!r} (write [{value}])")
        return value

    @field_validator("tools", "reads")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        check_tool_names(value)
        return value

    @model_validator(mode="after")
    def _apart(self) -> IdempotentWrites:
        both = set(self.tools) & set(self.reads)
        if both:
            raise ValueError(f"{', '.join(sorted(both))} both a write and a read: name it in one list")
        return self


def check_multiturn(key: str, value: Any) -> Any:
    """The spec-level refusals of `results`, `flows` and `state` (their items validate themselves)."""
    if value is None:
        return None
    if not value:
        example = {"results": "{TOOL: RULE}", "flows": "[{from, to}]", "state": "{/PATH: RULE}"}[key]
        raise ValueError(f"{key} is empty: give {example}, or remove the key")
    if key == "results":
        check_tool_names(value)
        for tool, rules in value.items():
            if isinstance(rules, list) and not rules:
                raise ValueError(f"results.{tool} is an empty list: give one rule per call, or a single rule")
            if isinstance(rules, list) and any("shape" in r.model_fields_set for r in rules):
                raise ValueError(
                    f"results.{tool}: shape is checked on one rule per tool (result_shape): give it in a "
                    "single rule, not in a list"
                )
    if key == "state":
        # JSON-pointer-like: `/files/report.txt`, `/items/0`; `""` is the whole snapshot.
        for path in value:
            if path and not path.startswith("/"):
                raise ValueError(
                    f"state path {path!r} must start with / (a JSON pointer such as /folders/0/name)"
                )
    return value


# What a spec being validated is part of: a turn of a conversation spec, its `conversation` checks, or
# neither (None: a spec of runs). Set around the validation of `turns` and `conversation` (specs.py), so
# the keys that only a turn can hold are refused elsewhere.
PART_OF: ContextVar[str | None] = ContextVar("tracescore_spec_part_of", default=None)

# `- unchecked` in `turns`: a turn BFCL checks nothing in (its ground truth is empty).
UNCHECKED = "unchecked"


def _inherit(given: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    # A spec dumped and read back (the CLI hands specs to a server so) keeps what it was given.
    inherited = {"name": name, "select": {}, "profile": "default"}
    for key in ("name", "select", "turns", "profile", "conversation"):
        if key in given and given[key] == inherited.get(key, ...):
            continue
        if key in given:
            raise ValueError(
                f"{where} sets {key}: it takes it from the conversation spec, remove it from there"
            )
    return {"name": name, **given}


def named_turns(data: Any) -> Any:
    """A conversation spec's raw `turns` (and `conversation` checks), each named after the spec and its
    place (a turn is a spec of its own and takes its name, select and profile from the conversation
    spec); `- unchecked` is a turn that checks nothing."""
    if not isinstance(data, dict):
        return data
    name = data.get("name") if isinstance(data.get("name"), str) else "spec"
    if isinstance(data.get("conversation"), dict):
        data = {
            **data,
            "conversation": _inherit(data["conversation"], f"{name} conversation", "conversation"),
        }
    if not isinstance(data.get("turns"), list):
        if data.get("multi_turn") is not None:
            raise ValueError(
                "multi_turn: bfcl sets how the turns of a spec with turns are judged: "
                "put it at the top of one"
            )
        return data
    if not data["turns"]:
        raise ValueError("turns is empty: give one mapping of checks per turn, or remove the key")
    bfcl = data.get("multi_turn") == "bfcl"
    turns = []
    for index, given in enumerate(data["turns"], 1):
        turn = given
        if given == UNCHECKED:
            turn = {"name": f"{name} turn {index}", "unchecked": True}
        elif isinstance(given, dict):
            turn = _inherit(given, f"{name} turn {index}", f"turns[{index - 1}]")
            if bfcl and not turn.get("unchecked"):
                turn = bfcl_turn(turn)
        elif given is None:
            turn = {"name": f"{name} turn {index}"}  # `- ` alone in YAML: refused below, by name
        turns.append(turn)
    return {**data, "turns": turns}


def bfcl_turn(turn: dict[str, Any]) -> dict[str, Any]:
    """A checked turn as BFCL's multi_turn_checker judges one: the model made some call in it (else
    `multi_turn:empty_turn_model_response`), and its expected results may come from this turn or any
    earlier one (`response_checker` over every turn's results so far). What the turn says itself wins."""
    turn = dict(turn)
    if "expect_no_tool_calls" not in turn:
        turn.setdefault("expect_tool_call", True)
    if "results" in turn:
        turn.setdefault("conversation_scope", ["results"])
    return turn


def check_share_or_scope(key: str, value: Any) -> Any:
    """`pass_threshold` (a share of the checks) and `conversation_scope` (checks named once each)."""
    if value is None:
        return None
    if key == "pass_threshold" and not 0 < value <= 1:  # NaN too
        raise ValueError(
            "pass_threshold is a share of the checks, more than 0 and at most 1 (0.5 passes half), "
            f"got {value}"
        )
    if key == "conversation_scope" and (not value or len(set(value)) != len(value)):
        raise ValueError("conversation_scope lists results, calls or both, each once")
    return value


def check_part_keys(spec: Any) -> bool:
    """Refuse `unchecked` and `conversation_scope` outside a turn, and an unchecked turn that checks
    something; True when the spec is an unchecked turn (which checks nothing, on purpose)."""
    part = PART_OF.get()
    if spec.profile == "reliability_eval" and spec.pass_threshold is not None:
        raise ValueError(
            "pass_threshold has no place in profile reliability_eval (its verdicts have no value): "
            "remove it, or use profile: default"
        )
    if part == "conversation" and spec.schema_ == "from_trace":
        raise ValueError(
            "schema: from_trace reads one run's tool definitions: give the schemas in conversation, "
            "or use from_trace in a turn"
        )
    if spec.conversation_scope is not None:
        if part != "turn":
            raise ValueError(
                "conversation_scope lets a turn's checks see the earlier turns: it belongs in a turn of "
                "a spec with turns"
            )
        unset = [key for key in spec.conversation_scope if getattr(spec, key) is None]
        if unset:
            raise ValueError(
                f"conversation_scope names {', '.join(unset)}, which this turn does not check: "
                "remove it from conversation_scope or add the check"
            )
    if spec.unchecked is None:
        return False
    if part != "turn":
        raise ValueError("unchecked marks a turn of a spec with turns that checks nothing: give checks here")
    # Defaults written out (a spec dumped and read back) are not checks.
    fields = type(spec).model_fields
    checked = sorted(
        k
        for k in spec.model_fields_set
        if k not in ("name", "select", "profile", "unchecked") and getattr(spec, k) != fields[k].default
    )
    if checked:
        raise ValueError(
            f"an unchecked turn checks nothing, but this one sets {', '.join(checked)}: remove "
            "them or unchecked"
        )
    return True


# What a spec with `turns` may say at its top level: which conversations it judges and the flows that
# span them; every other check belongs to a turn.
_CONVERSATION_KEYS = frozenset({"name", "select", "turns", "flows", "conversation", "multi_turn"})


def check_conversation_keys(given: dict[str, Any]) -> None:
    """`given`: the keys set at the top of a spec with turns, and their values. Defaults written out
    (a spec dumped and read back) are not checks."""
    defaults = {"scope": "all", "profile": "default"}
    misplaced = sorted(
        k for k, v in given.items() if k not in _CONVERSATION_KEYS and defaults.get(k, ...) != v
    )
    if misplaced:
        raise ValueError(
            f"{', '.join(misplaced)} at the top of a spec with turns: a conversation spec holds name, "
            "select, turns, flows, conversation and multi_turn; move each check into the turn it is "
            "about (or into conversation, for the whole conversation)"
        )

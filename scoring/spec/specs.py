"""Spec files: YAML or JSON, one spec or a list, validated with messages that name the fix (DESIGN §6)."""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from scoring.spec._json import not_json
from scoring.spec.check_models import (
    BFCL_TOLERANCE,
    BFCL_TYPE,
    ArgumentRules,
    CallCount,
    Latency,
    Normalize,
    Parallel,
    Rule,
    Trajectory,
    check_tool_names,
)
from scoring.spec.jsonschema import schema_problem
from scoring.spec.multiturn_models import (
    PART_OF,
    Flow,
    IdempotentWrites,
    ResultRules,
    check_conversation_keys,
    check_multiturn,
    check_part_keys,
    check_share_or_scope,
    named_turns,
)

ArgumentSpec = dict[str, Any]
SelectValue = str | int | float | bool | list[str | int | float | bool]


# Keys of the check catalogue (issue 6, docs/checks.md). profile reliability_eval refuses them all:
# Agno's ReliabilityEval has none of these checks.
CATALOGUE_KEYS = (
    "schema",
    "argument_rules",
    "calls",
    "forbidden_tools",
    "trajectory",
    "before",
    "parallel",
    "expect_no_tool_calls",
    "expect_tool_call",
    "require_executions_for_requests",
)

# The multi-turn checks (issue 21, docs/checks.md), kept apart from CATALOGUE_KEYS so that tuple keeps
# its meaning; profile reliability_eval refuses these too, and set-based scoring leaves them to Python.
MULTITURN_KEYS = ("results", "flows", "idempotent_writes", "state", "turns")


def _bare_string(value: Any) -> Any:
    if isinstance(value, str):
        raise ValueError(f"must be a list of tool names, not the bare string {value!r} (write [{value}])")
    return value


def _only_true(value: Any) -> Any:
    if value is not True:
        raise ValueError(f"the only value is true (got {json.dumps(value)}): to turn it off, remove the key")
    return value


class Spec(BaseModel):
    """One scoring spec. Unknown keys are refused: a misspelt key must not silently check nothing."""

    # `schema` is a spec key but also a (deprecated) BaseModel method: the field is `schema_` in Python
    # and `schema` everywhere else (files, dumps, the fingerprint).
    model_config = ConfigDict(extra="forbid", frozen=True, serialize_by_alias=True)

    name: str = Field(min_length=1)
    select: dict[str, SelectValue] = Field(default_factory=dict)
    scope: Literal["all", "leader"] = "all"
    expected_tools: list[str] | None = None
    arguments: dict[str, ArgumentSpec | list[ArgumentSpec]] | None = None
    allow_additional: StrictBool | None = None  # "no" must not quietly mean false
    strict_counts: Literal["executions", "attempts"] | None = None
    latency: Latency | None = None
    profile: Literal["default", "reliability_eval"] = "default"
    # The check catalogue.
    schema_: dict[str, dict[str, Any]] | Literal["from_trace"] | None = Field(default=None, alias="schema")
    argument_rules: dict[str, ArgumentRules] | None = None
    calls: dict[str, CallCount] | None = None
    forbidden_tools: list[str] | None = None
    # Tools the spec does not see at all: a framework's own tools that run beside the agent's (smolagents'
    # `final_answer`, DSPy's `finish`). Not a check: their executions and requests leave the evidence.
    ignore_tools: list[str] | None = None
    trajectory: Trajectory | None = None
    before: list[tuple[str, str]] | None = None
    parallel: Parallel | None = None
    expect_no_tool_calls: Literal[True] | None = None
    expect_tool_call: Literal[True] | None = None
    require_executions_for_requests: Literal[True] | None = None
    # How every `any_of` of argument_rules and trajectory values compares, unless a rule says otherwise.
    normalize: Normalize | None = None
    # The run passes when `value` reaches this share of its checks, as DeepEval's `threshold` (0.5 by
    # default there); gates still fail it. Unset: every check must be satisfied.
    pass_threshold: StrictFloat | StrictInt | None = None
    # Multi-turn checks (issue 21).
    # One rule, or several each met by a different clean call of the tool (paired optimally).
    results: dict[str, ResultRules] | None = None
    flows: list[Flow] | None = None
    idempotent_writes: IdempotentWrites | None = None
    state: dict[str, Rule] | None = None
    # A conversation spec: one spec of checks per turn, judged against the conversation's runs in order.
    turns: list[Spec] | None = None
    # Beside `turns`: checks judged against the whole conversation's executions (issue 31).
    conversation: Spec | None = None
    # At the top of a spec with turns: set each checked turn as BFCL's multi-turn checker judges it.
    multi_turn: Literal["bfcl"] | None = None
    # In a turn: a turn that checks nothing (`- unchecked`); checks that also see the earlier turns.
    unchecked: Literal[True] | None = None
    conversation_scope: list[Literal["results", "calls"]] | None = None

    @model_validator(mode="before")
    @classmethod
    def _turn_names(cls, data: Any) -> Any:
        return named_turns(data)

    @field_validator("turns", "conversation", mode="wrap")
    @classmethod
    def _part(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        token = PART_OF.set("turn" if info.field_name == "turns" else "conversation")
        try:
            return handler(value)
        finally:
            PART_OF.reset(token)

    @field_validator("pass_threshold", "conversation_scope")
    @classmethod
    def _issue_31(cls, value: Any, info: ValidationInfo) -> Any:
        return check_share_or_scope(str(info.field_name), value)

    @field_validator("results", "flows", "state")
    @classmethod
    def _multiturn(cls, value: Any, info: ValidationInfo) -> Any:
        return check_multiturn(str(info.field_name), value)

    @field_validator("expected_tools", "forbidden_tools", "ignore_tools", mode="before")
    @classmethod
    def _not_a_bare_string(cls, value: Any) -> Any:
        return _bare_string(value)

    @field_validator(
        "expect_no_tool_calls", "expect_tool_call", "require_executions_for_requests", mode="before"
    )
    @classmethod
    def _true(cls, value: Any) -> Any:
        return _only_true(value)

    @field_validator("expected_tools", "forbidden_tools", "ignore_tools")
    @classmethod
    def _names(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            check_tool_names(value)
        return value

    @field_validator("forbidden_tools")
    @classmethod
    def _some_forbidden(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("forbidden_tools is empty: name at least one tool, or remove the key")
        return value

    @field_validator("argument_rules", "calls")
    @classmethod
    def _tool_keys(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        check_tool_names(value or {})
        return value

    @field_validator("before", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            raise ValueError(f"before is a list of [A, B] pairs: write [{json.dumps(value)}]")
        return value

    @field_validator("before")
    @classmethod
    def _pair_names(cls, value: list[tuple[str, str]] | None) -> list[tuple[str, str]] | None:
        if value is not None:
            if not value:
                raise ValueError("before is empty: give at least one [A, B] pair, or remove the key")
            check_tool_names(name for pair in value for name in pair)
        return value

    @field_validator("schema_", mode="before")
    @classmethod
    def _schema_shape(cls, value: Any) -> Any:
        # One clear message instead of one per branch of the union.
        shape = "must be {TOOL: <JSON Schema object>} or from_trace"
        if isinstance(value, str) and value != "from_trace":
            raise ValueError(f"{shape}, not {value!r}")
        if value is not None and not isinstance(value, str | dict):
            raise ValueError(f"{shape}, not {json.dumps(value, default=str)}")
        for tool, schema in value.items() if isinstance(value, dict) else ():
            if not isinstance(schema, dict):
                raise ValueError(f"{shape}: the schema of {tool!r} is not an object")
        return value

    @field_validator("schema_")
    @classmethod
    def _schemas(
        cls, value: dict[str, dict[str, Any]] | str | None
    ) -> dict[str, dict[str, Any]] | str | None:
        if isinstance(value, dict):
            if not value:
                raise ValueError("schema is empty: give {TOOL: <JSON Schema>} or from_trace")
            for tool, schema in value.items():
                if not tool:
                    raise ValueError("tool names must not be empty")
                problem = not_json(schema) or schema_problem(schema)
                if problem:
                    raise ValueError(f"{tool}: {problem}")
        return value

    @field_validator("arguments")
    @classmethod
    def _json_values(
        cls, value: dict[str, ArgumentSpec | list[ArgumentSpec]] | None
    ) -> dict[str, ArgumentSpec | list[ArgumentSpec]] | None:
        for tool, specs in (value or {}).items():
            if not tool:
                raise ValueError("tool names must not be empty")
            for spec in specs if isinstance(specs, list) else [specs]:
                for key, expected in spec.items():
                    problem = not_json(expected)
                    if problem:
                        raise ValueError(
                            f"{tool}.{key}: {problem}, which no JSON argument can equal "
                            "(in YAML, quote dates and times: '2024-01-01')"
                        )
        return value

    @model_validator(mode="after")
    def _checks_something(self) -> Spec:
        reliability = self.profile == "reliability_eval"
        for tool, specs in (self.arguments or {}).items():
            if isinstance(specs, list) and not specs and not reliability:
                raise ValueError(
                    f"arguments for {tool!r} is an empty list, which checks nothing: give at least one "
                    "mapping of argument values, or {} for 'any clean call'"
                )
        if check_part_keys(self):
            return self  # an unchecked turn: it checks nothing, as asked
        if self.conversation is not None and self.turns is None:
            raise ValueError(
                "conversation holds checks of a whole conversation: it goes beside turns in a spec with turns"
            )
        if self.turns is not None:
            given = {k: getattr(self, k) for k in self.model_fields_set}
            check_conversation_keys({"schema" if k == "schema_" else k: v for k, v in given.items()})
            return self
        if reliability:
            for key in ("latency", *CATALOGUE_KEYS, *MULTITURN_KEYS):
                if self.catalogue_value(key) is not None:
                    raise ValueError(
                        f"{key} is not checked by profile reliability_eval (Agno's ReliabilityEval has no "
                        f"{key} check): remove it, or use profile: default"
                    )
        if self.expect_no_tool_calls and self.expect_tool_call:
            raise ValueError("expect_no_tool_calls and expect_tool_call contradict each other: keep one")
        if self.expect_no_tool_calls and self.expected_tools:
            raise ValueError(
                "expect_no_tool_calls contradicts expected_tools (an expected tool must run): keep one"
            )
        ignored = set(self.ignore_tools or []) & (self.expected_names | set(self.forbidden_tools or []))
        if ignored:
            raise ValueError(
                f"{', '.join(sorted(ignored))} both ignored and checked: a spec cannot see an ignored tool, "
                "remove it from ignore_tools or from the checks that name it"
            )
        both = set(self.forbidden_tools or []) & self.expected_names
        if both:
            raise ValueError(
                f"{', '.join(sorted(both))} both forbidden and expected: remove it from forbidden_tools "
                "or from the checks that expect it"
            )
        self._normalize_applies()
        # Agno's ReliabilityEval passes every run when it expects nothing; its parity profile does the
        # same (the loader warns), the default profile refuses such a spec.
        if self.checks_nothing and not reliability:
            raise ValueError(
                "this spec checks nothing: add expected_tools, arguments or latency, or a check from "
                "docs/checks.md"
            )
        return self

    @property
    def checks_nothing(self) -> bool:
        """No check and nothing policed: every run it selects passes (accepted only under the parity
        profile, `reliability_eval`, as Agno's ReliabilityEval with no expectations)."""
        has_checks = (
            bool(self.expected_tools)
            or bool(self.arguments)
            or self.latency is not None
            or any(self.catalogue_value(key) is not None for key in (*CATALOGUE_KEYS, *MULTITURN_KEYS))
        )
        polices = self.profile == "reliability_eval" and self.expected_tools is not None
        return not has_checks and not polices

    def rules(self) -> list[Rule]:
        """Every argument rule of the spec: argument_rules and trajectory values."""
        found = [r for rules in (self.argument_rules or {}).values() for r in rules.values.values()]
        items = self.trajectory.tools if self.trajectory else []
        return found + [r for item in items for r in item.values.values()]

    def _normalize_applies(self) -> None:
        if self.normalize != "bfcl" and any(r.type is not None and r.normalize is None for r in self.rules()):
            raise ValueError(BFCL_TYPE)
        if self.normalize is None:
            return
        inherit = [r for r in self.rules() if r.any_of is not None and r.normalize is None]
        if not inherit:
            raise ValueError(
                f"normalize: {json.dumps(self.normalize)} changes how any_of values of argument_rules and "
                "trajectory compare, and this spec has no any_of that uses it: remove it"
            )
        if self.normalize == "bfcl" and any(r.tolerance is not None for r in inherit):
            raise ValueError(BFCL_TOLERANCE)

    def catalogue_value(self, key: str) -> Any:
        """The value of a spec key by its spec-file name (`schema` is the field `schema_`)."""
        return getattr(self, "schema_" if key == "schema" else key)

    @property
    def expected_names(self) -> set[str]:
        """Tools the spec expects to run: never "additional" in strict mode (a cap of 0 expects none)."""
        names = set(self.expected_tools or []) | set(self.arguments or {}) | set(self.argument_rules or {})
        names |= {tool for tool, count in (self.calls or {}).items() if count.bounds[1] != 0}
        if isinstance(self.schema_, dict):
            names |= set(self.schema_)
        if self.trajectory is not None:
            names |= {item.tool for item in self.trajectory.tools}
        names |= {name for pair in self.before or [] for name in pair}
        names |= set(self.parallel.tools if self.parallel else [])
        names |= set(self.results or {})
        names |= {name for flow in self.flows or [] for name in (flow.source_tool, flow.target_tool)}
        return names

    @property
    def named_tools(self) -> set[str]:
        """Every tool a check of the spec names: the handoffs it sees (scoring/judge/_scope.py)."""
        return self.expected_names | set(self.forbidden_tools or []) | set(self.calls or {})

    @property
    def allows_additional(self) -> bool:
        if self.allow_additional is not None:
            return self.allow_additional
        return self.profile != "reliability_eval"

    @property
    def counts_attempts(self) -> bool:
        if self.strict_counts is not None:
            return self.strict_counts == "attempts"
        return self.profile == "reliability_eval"

    def argument_specs(self, tool: str) -> list[ArgumentSpec]:
        specs = (self.arguments or {}).get(tool, [])
        return specs if isinstance(specs, list) else [specs]

    def canonical(self) -> dict[str, Any]:
        """The spec as data, with only what changes no verdict normalised away."""
        data = self.model_dump(mode="json", exclude_none=True, by_alias=True)
        if "expected_tools" in data:
            data["expected_tools"] = sorted(set(data["expected_tools"]))
        return data

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the canonical JSON: key order and the order of expected_tools do not change it.

        Cached: a spec is frozen, and every verdict carries its fingerprint (recomputing it was a third
        of the cost of judging a run)."""
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()

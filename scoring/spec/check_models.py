"""Spec models of the check catalogue (issue 6; docs/checks.md): argument rules, counts, trajectories,
parallel rounds, latency percentiles. Every model refuses unknown keys, like the spec itself.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from scoring.spec._json import not_json
from scoring.spec.jsonschema import schema_problem
from scoring.spec.percentiles import PERCENTILES, window_seconds
from scoring.spec.regex import pattern_problem

Number = StrictFloat | StrictInt
# `true`: tracescore's folding; `bfcl`: BFCL's own checker (docs/checks.md, "BFCL mode").
Normalize = StrictBool | Literal["bfcl"]


# BFCL's type names (its PYTHON_TYPE_MAPPING); `array[T]` also declares the items' type.
BFCL_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
BFCL_ARRAY = re.compile(r"(array|tuple)\[(\w+)\]")


def type_problem(declared: str) -> str | None:
    """Why a rule's `type` is not one BFCL declares, or None."""
    array = BFCL_ARRAY.fullmatch(declared)
    if (array.group(2) if array else declared) in BFCL_TYPES:
        return None
    return f"type {declared!r} is not one of {', '.join(BFCL_TYPES)} or array[ITEM_TYPE]"


def check_tool_names(names: Any) -> None:
    if any(not name for name in names):
        raise ValueError("tool names must not be empty")


class Rule(BaseModel):
    """One argument's acceptable values, BFCL style. Constraints that are given must all hold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    any_of: list[Any] | None = None
    optional: StrictBool | None = None
    normalize: Normalize | None = None
    regex: str | None = None
    range: tuple[Number | None, Number | None] | None = None
    tolerance: Number | None = None
    ignore: StrictBool | None = None
    # BFCL mode only: the type BFCL reads from the function's declaration (`float`, `array[integer]`).
    type: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _a_mapping(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(
                f"a rule is a mapping such as {{any_of: [{_yaml(value)}]}}, not the bare value {_yaml(value)}"
            )
        return value

    @field_validator("any_of")
    @classmethod
    def _values(cls, values: list[Any] | None) -> list[Any] | None:
        if values is not None:
            if not values:
                raise ValueError("any_of is empty: no value could ever match; list at least one")
            problem = not_json(values)
            if problem:
                raise ValueError(f"{problem}, which no JSON argument can equal (in YAML, quote dates)")
        return values

    @field_validator("regex")
    @classmethod
    def _linear(cls, pattern: str | None) -> str | None:
        # Refused here, never at match time: scoring then cannot meet a pattern it cannot run.
        if pattern is not None and (problem := pattern_problem(pattern)) is not None:
            shown = pattern if len(pattern) <= 60 else f"{pattern[:60]}…"
            raise ValueError(f"regex {shown!r} cannot be used: {problem} (regexes are RE2 syntax)")
        return pattern

    @field_validator("type")
    @classmethod
    def _bfcl_type(cls, declared: str | None) -> str | None:
        if declared is not None and (problem := type_problem(declared)) is not None:
            raise ValueError(problem)
        return declared

    @field_validator("tolerance")
    @classmethod
    def _non_negative(cls, tolerance: float | None) -> float | None:
        if tolerance is not None and not tolerance >= 0:  # NaN too
            raise ValueError(f"tolerance must be 0 or more, got {tolerance}")
        return tolerance

    @model_validator(mode="after")
    def _coherent(self) -> Rule:
        constraints = [
            k for k in ("any_of", "normalize", "regex", "range", "tolerance", "type") if getattr(self, k)
        ]
        if self.ignore and (constraints or self.optional is not None):
            raise ValueError(
                f"ignore: true accepts anything, so {', '.join(constraints) or 'optional'} "
                "would never be checked: keep one of them"
            )
        if self.type is not None and self.normalize not in (None, "bfcl"):
            raise ValueError(BFCL_TYPE)
        for knob in ("normalize", "tolerance", "type"):
            if getattr(self, knob) is not None and self.any_of is None:
                raise ValueError(f"{knob} changes how any_of values compare: give any_of too")
        if self.normalize == "bfcl" and self.tolerance is not None:
            raise ValueError(BFCL_TOLERANCE)
        if self.range is not None:
            low, high = self.range
            if low is None and high is None:
                raise ValueError("range [null, null] bounds nothing: give lo, hi or both")
            if low is not None and high is not None and low > high:
                raise ValueError(f"range [{low}, {high}] is empty: lo must not exceed hi")
        return self


BFCL_TYPE = "type is the declared type of normalize: bfcl, which this rule does not use: drop type"
BFCL_TOLERANCE = "tolerance has no place in normalize: bfcl (BFCL compares numbers exactly): drop one of them"


def _yaml(value: Any) -> str:
    return (
        repr(value)
        if isinstance(value, str)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )


def check_rule_keys(values: dict[str, Rule]) -> dict[str, Rule]:
    for key in values:
        if not key or any(not part for part in key.split(".")):
            raise ValueError(f"argument key {key!r} is not a key or dotted path (write filter.region)")
    return values


class ArgumentRules(BaseModel):
    """`argument_rules: {TOOL: {mode, values}}`: some clean execution meets every rule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["subset", "exact"] = "subset"
    values: dict[str, Rule]
    # per_key: the check counts in `value` the share of keys its best call meets (DeepEval, Ragas).
    score: Literal["per_key"] | None = None

    @field_validator("values")
    @classmethod
    def _keys(cls, values: dict[str, Rule]) -> dict[str, Rule]:
        return check_rule_keys(values)


def check_result_paths(values: dict[str, Rule]) -> dict[str, Rule]:
    for key in values:
        if not key or any(not part for part in key.split(".")):
            raise ValueError(
                f"result path {key!r} is not a key or dotted path (write items.0.id; for the whole "
                "result use `value`)"
            )
    return values


class ResultRule(BaseModel):
    """`results: {TOOL: …}`: some clean execution of TOOL returned a result meeting every part given;
    `{}` asks only that some clean execution's result was captured."""

    model_config = ConfigDict(extra="forbid", frozen=True, serialize_by_alias=True)

    value: Rule | None = None  # the whole result (a text result is a string)
    # The result's text as the tool returned it: numbers as written (`5` is not `5.0`), BFCL's comparison.
    text: Rule | None = None
    values: dict[str, Rule] | None = None  # dotted paths into the result; list items by index
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    # BFCL's structure check: same dict keys and list lengths as this example, values not compared.
    shape: Any = None

    @field_validator("values")
    @classmethod
    def _paths(cls, values: dict[str, Rule] | None) -> dict[str, Rule] | None:
        return None if values is None else check_result_paths(values)

    @field_validator("schema_")
    @classmethod
    def _schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            problem = not_json(schema) or schema_problem(schema)
            if problem:
                raise ValueError(f"schema: {problem}")
        return schema

    @field_validator("shape")
    @classmethod
    def _json_shape(cls, shape: Any) -> Any:
        problem = not_json(shape)
        if problem:
            raise ValueError(f"shape: {problem}")
        return shape


class TrajectoryItem(BaseModel):
    """One expected call of a trajectory: a tool name, optionally with argument rules (subset match)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1)
    values: dict[str, Rule] = Field(default_factory=dict)
    # None is subset (extra keys fine); exact refuses keys beyond `values`, as BFCL refuses parameters
    # its answer does not name.
    mode: Literal["subset", "exact"] | None = None
    # What this same call must have returned (`results`' rules, bound to the call that met `values`).
    result: ResultRule | None = None

    @field_validator("values")
    @classmethod
    def _keys(cls, values: dict[str, Rule]) -> dict[str, Rule]:
        return check_rule_keys(values)

    @model_validator(mode="after")
    def _no_shape(self) -> TrajectoryItem:
        if self.result is not None and "shape" in self.result.model_fields_set:
            raise ValueError(
                "result.shape is the check result_shape of `results`, not a rule a call can meet: "
                "give value, values or schema here"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        # A bare tool name is the common case; it is the same item as {tool: NAME}.
        if isinstance(value, str):
            if not value:
                raise ValueError("tool names must not be empty")
            return {"tool": value}
        return value


class Trajectory(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # subsequence: the reference's calls in its order, other calls allowed between (DeepEval's ordering).
    mode: Literal["strict", "unordered", "subset", "superset", "subsequence"]
    tools: list[TrajectoryItem]

    @model_validator(mode="after")
    def _checks_something(self) -> Trajectory:
        if self.mode in ("superset", "subsequence") and not self.tools:
            raise ValueError(
                f"{self.mode} of an empty trajectory is always satisfied: list the calls expected"
            )
        return self


class CallCount(BaseModel):
    """`calls: {TOOL: {min, max}}` or `{exactly}`: how many clean executions a tool may have."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: StrictInt | None = Field(default=None, ge=0)
    max: StrictInt | None = Field(default=None, ge=0)
    exactly: StrictInt | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _coherent(self) -> CallCount:
        if self.exactly is not None and (self.min is not None or self.max is not None):
            raise ValueError("exactly cannot be combined with min or max: give one form")
        if self.exactly is None and self.min is None and self.max is None:
            raise ValueError("give min, max (or both) or exactly")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is greater than max {self.max}")
        return self

    @property
    def bounds(self) -> tuple[int, int | None]:
        if self.exactly is not None:
            return self.exactly, self.exactly
        return self.min or 0, self.max


class Parallel(BaseModel):
    """`parallel: {tools, max_rounds}`: every listed tool ran cleanly, all within max_rounds rounds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: list[str] = Field(min_length=1)
    max_rounds: StrictInt = Field(default=1, ge=1)

    @field_validator("tools", mode="before")
    @classmethod
    def _not_a_bare_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(f"must be a list of tool names, not the bare string {value!r} (write [{value}])")
        return value

    @field_validator("tools")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        check_tool_names(value)
        return value


Percentile = Literal["p50_ms", "p95_ms", "p99_ms"]


def check_bounds(name: str, bounds: dict[str, float] | None) -> None:
    if bounds is None:
        return
    if not bounds:
        raise ValueError(f'{name} is empty: name at least one tool (or "*") and its bound')
    for tool, bound in bounds.items():
        if not bound > 0:  # NaN too
            raise ValueError(f"{name} for {tool!r} must be greater than 0, got {bound}")
        if not tool:
            raise ValueError("tool names must not be empty")


class Latency(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Strict: `true` or "5" is a mistake in a spec file, not a 1 ms or 5 ms bound.
    max_ms: dict[str, StrictFloat | StrictInt] | None = Field(
        default=None,
        description='upper bound per tool in milliseconds; "*" applies to every tool not named',
    )
    # Percentile bounds are judged per task over its runs (the task aggregates), not per run.
    p50_ms: dict[str, StrictFloat | StrictInt] | None = None
    p95_ms: dict[str, StrictFloat | StrictInt] | None = None
    p99_ms: dict[str, StrictFloat | StrictInt] | None = None
    window: str | None = None

    @field_validator("max_ms", "p50_ms", "p95_ms", "p99_ms")
    @classmethod
    def _positive(cls, bounds: dict[str, float] | None, info: ValidationInfo) -> dict[str, float] | None:
        check_bounds(str(info.field_name), bounds)
        return bounds

    @field_validator("window")
    @classmethod
    def _duration(cls, window: str | None) -> str | None:
        if window is not None:
            window_seconds(window)
        return window

    @model_validator(mode="after")
    def _bounded(self) -> Latency:
        if self.max_ms is None and not self.percentiles:
            raise ValueError("give max_ms (per run) or p50_ms, p95_ms, p99_ms (per task over its runs)")
        if self.window is not None and not self.percentiles:
            raise ValueError("window groups runs for percentile bounds: give p50_ms, p95_ms or p99_ms too")
        return self

    @property
    def percentiles(self) -> dict[str, dict[str, float]]:
        """Percentile bounds given, keyed p50_ms / p95_ms / p99_ms."""
        return {k: v for k in PERCENTILES if (v := getattr(self, k)) is not None}

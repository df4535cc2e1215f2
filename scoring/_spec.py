"""Spec files: YAML or JSON, one spec or a list, validated with messages that name the fix (DESIGN §6)."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

ArgumentSpec = dict[str, Any]
SelectValue = str | int | float | bool | list[str | int | float | bool]

_MAX_SPEC_FILE_BYTES = 4 * 1024 * 1024


class SpecError(ValueError):
    """A spec file cannot be used; the message names the file, the spec, the key and the fix."""


class Latency(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Strict: `true` or "5" is a mistake in a spec file, not a 1 ms or 5 ms bound.
    max_ms: dict[str, StrictFloat | StrictInt] = Field(
        description='upper bound per tool in milliseconds; "*" applies to every tool not named'
    )

    @field_validator("max_ms")
    @classmethod
    def _positive(cls, bounds: dict[str, float]) -> dict[str, float]:
        for tool, bound in bounds.items():
            if not bound > 0:  # NaN too
                raise ValueError(f"max_ms for {tool!r} must be greater than 0, got {bound}")
        if not bounds:
            raise ValueError('max_ms is empty: name at least one tool (or "*") and its bound')
        return bounds


class Spec(BaseModel):
    """One scoring spec. Unknown keys are refused: a misspelt key must not silently check nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    select: dict[str, SelectValue] = Field(default_factory=dict)
    scope: Literal["all", "leader"] = "all"
    expected_tools: list[str] | None = None
    arguments: dict[str, ArgumentSpec | list[ArgumentSpec]] | None = None
    allow_additional: StrictBool | None = None  # "no" must not quietly mean false
    strict_counts: Literal["executions", "attempts"] | None = None
    latency: Latency | None = None
    profile: Literal["default", "reliability_eval"] = "default"

    @field_validator("expected_tools", mode="before")
    @classmethod
    def _not_a_bare_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(f"must be a list of tool names, not the bare string {value!r} (write [{value}])")
        return value

    @field_validator("expected_tools")
    @classmethod
    def _names(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not name for name in value):
            raise ValueError("tool names must not be empty")
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
                    problem = _not_json(expected)
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
        if reliability and self.latency is not None:
            raise ValueError(
                "latency is not checked by profile reliability_eval (Agno's ReliabilityEval has no "
                "latency check): remove it, or use profile: default"
            )
        has_checks = bool(self.expected_tools) or bool(self.arguments) or self.latency is not None
        polices = reliability and self.expected_tools is not None
        if not has_checks and not polices:
            raise ValueError("this spec checks nothing: add expected_tools, arguments or latency")
        return self

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
        data = self.model_dump(mode="json", exclude_none=True)
        if "expected_tools" in data:
            data["expected_tools"] = sorted(set(data["expected_tools"]))
        return data

    @property
    def fingerprint(self) -> str:
        """sha256 of the canonical JSON: key order and the order of expected_tools do not change it."""
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()


def _not_json(value: Any) -> str | None:
    """Why a spec value is not a JSON value (YAML also makes dates, times and NaN), or None."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number"
    if isinstance(value, list):
        return next((p for p in map(_not_json, value) if p), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return "an object key is not a string"
        return next((p for p in map(_not_json, value.values()) if p), None)
    return f"{value!r} is a {type(value).__name__}, not a JSON value"


def _documents(path: Path) -> list[Any]:
    size = path.stat().st_size
    if size > _MAX_SPEC_FILE_BYTES:
        raise SpecError(f"{path}: {size} bytes is too large for a spec file (limit 4 MiB)")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".json":
            return [json.loads(text)]
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except (json.JSONDecodeError, yaml.YAMLError, RecursionError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        raise SpecError(f"{path}: not valid {kind}: {exc}") from exc


def _location(error: Any) -> str:
    return ".".join(str(part) for part in error["loc"]) or "(spec)"


def _unknown_key(loc: tuple[Any, ...]) -> str:
    known = list(Latency.model_fields if loc[:1] == ("latency",) else Spec.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key; {hint}known keys are {', '.join(known)}"


def _spec(path: Path, index: int, raw: Any) -> Spec:
    label = f"spec #{index + 1}"
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        label = f"spec {raw['name']!r}"
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: {label}: a spec must be a mapping of keys (name, expected_tools, …)")
    try:
        return Spec.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            message = str(error["msg"]).removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = _unknown_key(error["loc"])
            problems.append(f"{_location(error)}: {message}")
        raise SpecError(f"{path}: {label}: " + "; ".join(problems)) from exc
    except RecursionError as exc:
        raise SpecError(f"{path}: {label}: nested too deeply") from exc


def load_spec_file(path: Path) -> list[Spec]:
    specs: list[Spec] = []
    for document in _documents(path):
        items = document if isinstance(document, list) else [document]
        specs.extend(_spec(path, len(specs), item) for item in items)
    if not specs:
        raise SpecError(f"{path}: holds no spec")
    return specs


_SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def load_specs(paths: list[Path]) -> list[Spec]:
    """Every spec from these files and directories; any problem stops everything (nothing is scored)."""
    specs: list[Spec] = []
    origins: dict[str, list[Path]] = {}
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.suffix.lower() in _SPEC_SUFFIXES and p.is_file())
            if not files:
                raise SpecError(f"{path}: directory holds no .yaml, .yml or .json spec file")
        elif path.exists():
            files = [path]
        else:
            raise SpecError(f"{path}: no such file or directory")
        for file in files:
            for spec in load_spec_file(file):
                specs.append(spec)
                origins.setdefault(spec.name, []).append(file)
    duplicates = [
        f"spec {name!r} in {', '.join(str(f) for f in where)}"
        for name, where in sorted(origins.items())
        if len(where) > 1
    ]
    if duplicates:
        raise SpecError(
            f"{'; '.join(duplicates)}: the name is used more than once; give each spec a unique name"
        )
    return specs

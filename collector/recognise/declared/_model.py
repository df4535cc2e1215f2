"""The conventions file's format, as pydantic models: every key known, every value checked, nothing
guessed. docs/conventions.md ("Your own conventions") documents each key; the compiled form that
recognition runs is collector/recognise/declared/_compiled.py."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

# How an attribute's value is read before a JSON pointer goes into it: `json` parses JSON text,
# `python-literal` reads a Python repr's literals (never evaluated), `text` takes the text as it is.
Parser = Literal["json", "python-literal", "text"]
PARSERS: tuple[str, ...] = ("json", "python-literal", "text")

# The names the built-in adapters store in `executions.convention`: a user's convention is told apart.
BUILT_IN_NAMES = frozenset(
    {
        "mcp",
        "traceloop",
        "gen_ai",
        "adk",
        "pydantic_ai_v2",
        "strands",
        "openinference",
        "vercel_ai",
        "haystack",
    }
)
_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"
_MAX_KEY_CHARS = 256
_MAX_POINTER_CHARS = 1_000

Scalar = StrictStr | StrictBool | StrictInt | StrictFloat


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Equals(_Strict):
    """An attribute whose value, read with `parser`, equals `equals` (MLflow writes `"\\"TOOL\\""`)."""

    equals: Any
    parser: Parser = "text"

    @model_validator(mode="after")
    def _something_to_compare(self) -> Equals:
        if self.equals is None:
            raise ValueError("equals needs a value (null matches nothing)")
        return self


class Match(_Strict):
    """Which spans the convention claims: every key given must hold."""

    span_name: StrictStr | None = None
    span_name_pattern: StrictStr | None = Field(default=None, max_length=1_000)
    scope: StrictStr | None = None
    attributes: dict[StrictStr, Scalar | Equals] = Field(default_factory=dict)

    @field_validator("span_name_pattern")
    @classmethod
    def _linear(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            from scoring.spec.regex import pattern_problem

            problem = pattern_problem(pattern)
            if problem is not None:
                raise ValueError(f"{pattern!r}: {problem}")
        return pattern

    @model_validator(mode="after")
    def _narrow(self) -> Match:
        if self.span_name is None and self.span_name_pattern is None and not self.attributes:
            raise ValueError(
                "a match needs span_name, span_name_pattern or attributes (a scope alone would claim every "
                "span of it, agents and model calls too)"
            )
        if self.span_name is not None and self.span_name_pattern is not None:
            raise ValueError("give span_name (exact) or span_name_pattern (a regex), not both")
        for key in self.attributes:
            if not key or len(key) > _MAX_KEY_CHARS:
                raise ValueError(f"attribute key {key[:40]!r}: 1 to {_MAX_KEY_CHARS} characters")
        return self


class Source(_Strict):
    """Where one field's value is: an attribute (read with a parser, then a JSON pointer into it), or
    the span's name (with a prefix taken off)."""

    attribute: StrictStr | None = Field(default=None, min_length=1, max_length=_MAX_KEY_CHARS)
    span_name: StrictBool = False
    strip_prefix: StrictStr | None = None
    pointer: StrictStr | None = Field(default=None, max_length=_MAX_POINTER_CHARS)
    parser: Parser | None = None

    @model_validator(mode="after")
    def _one_place(self) -> Source:
        if (self.attribute is None) == (not self.span_name):
            raise ValueError("give attribute: KEY or span_name: true (one of them)")
        if self.pointer is not None and self.pointer != "" and not self.pointer.startswith("/"):
            raise ValueError(f"pointer {self.pointer!r}: a JSON pointer (RFC 6901) is empty or starts with /")
        if self.span_name and (self.pointer is not None or self.parser is not None):
            raise ValueError("pointer and parser read an attribute's value; the span name is text")
        return self


Sources = Source | list[Source]


class ToolConvention(_Strict):
    """One kind of tool span: how it is found, and where each part of the call is."""

    name: StrictStr = Field(pattern=_NAME_PATTERN)
    match: Match
    tool_name: Sources
    arguments: Sources | None = None
    result: Sources | None = None
    error: Sources | None = None
    call_id: Sources | None = None
    paused: Sources | None = None

    @model_validator(mode="after")
    def _own_name(self, info: ValidationInfo) -> ToolConvention:
        # tracescore's own files (collector/recognise/declared/*.yaml) write built-in conventions.
        if self.name in BUILT_IN_NAMES and not (info.context or {}).get("built_in"):
            raise ValueError(
                f"name {self.name!r} is a built-in convention's (executions.convention tells them apart): "
                "choose a name of your own"
            )
        return self


class AgentConvention(_Strict):
    """One kind of agent span: how it is found, and where the agent's name (and its run id) are. Its
    tool calls below it are placed under that agent, as under any agent span (docs/conventions.md)."""

    name: StrictStr = Field(pattern=_NAME_PATTERN)
    match: Match
    agent_name: Sources
    run_id: Sources | None = None


class ConventionsFile(_Strict):
    """A conventions file: its format version, its tool conventions and its agent conventions, each tried
    in the order written (names unique across every file: collector/recognise/declared/files.py)."""

    version: Literal[1] = 1
    tools: list[ToolConvention] = Field(default_factory=list, max_length=100)
    agents: list[AgentConvention] = Field(default_factory=list, max_length=100)

    @model_validator(mode="after")
    def _something(self) -> ConventionsFile:
        if not self.tools and not self.agents:
            raise ValueError(
                "a conventions file declares tools: [ … ] or agents: [ … ] (docs/conventions.md)"
            )
        return self

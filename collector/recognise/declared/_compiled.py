"""A validated conventions file compiled once into what recognition runs on every span: a matcher per
convention (its cheapest tests first: the span's name, its scope, attribute lookups, and the regex
last) and a reader per field, with each parser and pointer resolved ahead of time.

Reading a span never raises: a value its parser cannot read is kept raw and flagged (arguments) or
left unread (every other field), and anything unexpected inside one convention is logged once and
the span left to the next convention, so a user's convention cannot stop the recognition of others."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from collector.model.domain import NO_ARGUMENTS, Arguments, Span
from collector.recognise.declared._found import DeclaredContent
from collector.recognise.declared._model import (
    AgentConvention,
    ConventionsFile,
    Equals,
    Source,
    Sources,
    ToolConvention,
)
from collector.recognise.declared._values import MISSING, Unreadable, follow, parse, pointer_tokens

log = logging.getLogger("tracescore.conventions")

_TRUE_TEXTS = frozenset({"true", "1", "yes"})
_FALSE_TEXTS = frozenset({"", "false", "0", "no", "none", "null"})


def _equal(seen: Any, expected: Any) -> bool:
    """Equality as JSON sees it: `true` is not `1`."""
    if isinstance(seen, bool) or isinstance(expected, bool):
        return isinstance(seen, bool) and isinstance(expected, bool) and seen == expected
    return bool(seen == expected)


@dataclass(frozen=True, slots=True)
class _Condition:
    key: str
    expected: Any
    parser: str

    def holds(self, attributes: dict[str, Any]) -> bool:
        value = attributes.get(self.key, MISSING)
        if value is MISSING:
            return False
        if self.parser != "text":
            try:
                value = parse(value, self.parser)
            except Unreadable:
                return False
        return _equal(value, self.expected)


@dataclass(frozen=True, slots=True)
class _Matcher:
    span_name: str | None
    pattern: str | None
    scope: str | None
    conditions: tuple[_Condition, ...]

    def matches(self, span: Span) -> bool:
        if self.span_name is not None and span.name != self.span_name:
            return False
        if self.scope is not None and span.resource.scope_name != self.scope:
            return False
        attributes = span.attributes
        if not all(c.holds(attributes) for c in self.conditions):
            return False
        if self.pattern is not None:
            from scoring.spec.regex import fullmatch

            return fullmatch(self.pattern, span.name)
        return True


@dataclass(frozen=True, slots=True)
class _Reader:
    """One place a field's value may be: an attribute read with a parser then a pointer, or the name."""

    attribute: str | None
    strip_prefix: str | None
    parser: str | None  # None: the value as received
    tokens: tuple[str, ...] | None  # None: no pointer

    def raw(self, span: Span) -> Any:
        """The value as the span holds it, or MISSING."""
        if self.attribute is None:
            return span.name
        return span.attributes.get(self.attribute, MISSING)

    def value(self, raw: Any) -> Any:
        """The value the convention names inside `raw` (raises Unreadable), or MISSING."""
        if self.parser is not None:
            raw = parse(raw, self.parser)
        if self.tokens is not None:
            raw = follow(raw, self.tokens)
        if isinstance(raw, str) and self.strip_prefix and raw.startswith(self.strip_prefix):
            raw = raw.removeprefix(self.strip_prefix)
        return raw


def _readers(sources: Sources | None, default_parser: str | None) -> tuple[_Reader, ...]:
    if sources is None:
        return ()
    listed = sources if isinstance(sources, list) else [sources]
    return tuple(_reader(s, default_parser) for s in listed)


def _reader(source: Source, default_parser: str | None) -> _Reader:
    tokens = pointer_tokens(source.pointer) if source.pointer is not None else None
    parser = source.parser or ("json" if tokens else default_parser)
    if source.span_name:
        parser = None
    return _Reader(source.attribute, source.strip_prefix, parser, tokens)


def _text(readers: tuple[_Reader, ...], span: Span) -> str | None:
    """The first non-empty scalar the readers find, as text (a tool name, a call id)."""
    for reader in readers:
        raw = reader.raw(span)
        if raw is MISSING or raw is None:
            continue
        try:
            value = reader.value(raw)
        except Unreadable:
            continue
        if isinstance(value, str | int | float) and not isinstance(value, bool) and value != "":
            return str(value)
    return None


def _arguments(readers: tuple[_Reader, ...], span: Span) -> Arguments:
    for reader in readers:
        raw = reader.raw(span)
        if raw is MISSING or raw is None:
            continue
        text = raw if isinstance(raw, str) else None
        try:
            value = reader.value(raw)
        except Unreadable as exc:
            return Arguments(value=None, raw=text, error=str(exc))
        if value is MISSING:
            pointer = "/" + "/".join(reader.tokens or ())
            return Arguments(value=None, raw=text, error=f"pointer {pointer} names nothing in it")
        # JSON text read whole is stored as received; anything else is stored as the value read.
        as_received = reader.parser == "json" and reader.tokens is None
        return Arguments(value=value, raw=text, raw_is_value=as_received)
    return NO_ARGUMENTS


def _result(readers: tuple[_Reader, ...], span: Span) -> Any:
    for reader in readers:
        raw = reader.raw(span)
        if raw is MISSING or raw is None:
            continue
        try:
            value = reader.value(raw)
        except Unreadable:
            return raw  # kept as text, as a built-in keeps a result that is not JSON
        return None if value is MISSING else value
    return None


def _flag(readers: tuple[_Reader, ...], span: Span) -> tuple[bool, str | None]:
    """Whether a flag (error, paused) is set, and the text it holds: `true`, or a message."""
    for reader in readers:
        raw = reader.raw(span)
        if raw is MISSING or raw is None:
            continue
        try:
            value = reader.value(raw)
        except Unreadable:
            value = raw
        if value is MISSING or value is None or value is False or value == 0:
            return False, None
        if value is True:
            return True, None
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in _FALSE_TEXTS:
                return False, None
            return True, None if lowered in _TRUE_TEXTS else value
        if isinstance(value, dict | list):
            return (True, None) if value else (False, None)
        return True, None
    return False, None


@dataclass(frozen=True, slots=True)
class _Tool:
    name: str
    matcher: _Matcher
    tool_name: tuple[_Reader, ...]
    arguments: tuple[_Reader, ...]
    result: tuple[_Reader, ...]
    error: tuple[_Reader, ...]
    call_id: tuple[_Reader, ...]
    paused: tuple[_Reader, ...]

    def read(self, span: Span) -> DeclaredContent | None:
        if not self.matcher.matches(span):
            return None
        tool_name = _text(self.tool_name, span)
        if tool_name is None:
            return None  # a tool span that names no tool cannot be checked: not an execution
        error, message = _flag(self.error, span)
        return DeclaredContent(
            self.name,
            tool_name,
            _arguments(self.arguments, span),
            _result(self.result, span),
            _text(self.call_id, span),
            error,
            message,
            _flag(self.paused, span)[0],
        )


def _matcher(convention: ToolConvention | AgentConvention) -> _Matcher:
    match = convention.match
    conditions = tuple(
        _Condition(key, rule.equals, rule.parser)
        if isinstance(rule, Equals)
        else _Condition(key, rule, "text")
        for key, rule in match.attributes.items()
    )
    return _Matcher(match.span_name, match.span_name_pattern, match.scope, conditions)


def _tool(convention: ToolConvention) -> _Tool:
    return _Tool(
        convention.name,
        _matcher(convention),
        _readers(convention.tool_name, None),
        _readers(convention.arguments, "json"),
        _readers(convention.result, None),
        _readers(convention.error, None),
        _readers(convention.call_id, None),
        _readers(convention.paused, None),
    )


@dataclass(frozen=True, slots=True)
class _Agent:
    name: str
    matcher: _Matcher
    agent_name: tuple[_Reader, ...]
    run_id: tuple[_Reader, ...]

    def read(self, span: Span) -> tuple[str, str | None] | None:
        if not self.matcher.matches(span):
            return None
        name = _text(self.agent_name, span)
        return None if name is None else (name, _text(self.run_id, span))


def _agent(convention: AgentConvention) -> _Agent:
    return _Agent(
        convention.name,
        _matcher(convention),
        _readers(convention.agent_name, None),
        _readers(convention.run_id, None),
    )


@dataclass(frozen=True, slots=True)
class _Gate:
    """What a span must have for any convention to claim it: one exact name, attribute key or scope per
    convention (the one it cannot match without). Most spans fail all three in three C-level lookups,
    where asking each convention in turn cost ~1.7 µs a convention (bench/declared_conventions.py)."""

    names: frozenset[str]
    keys: frozenset[str]
    scopes: frozenset[str]
    open: bool  # a convention with only a span-name pattern: every span is asked

    @classmethod
    def of(cls, conventions: tuple[_Tool, ...] | tuple[_Agent, ...]) -> _Gate:
        names, keys, scopes, open_ = set(), set(), set(), False
        for convention in conventions:
            matcher = convention.matcher
            if matcher.span_name is not None:
                names.add(matcher.span_name)
            elif matcher.conditions:
                keys.add(matcher.conditions[0].key)
            elif matcher.scope is not None:
                scopes.add(matcher.scope)
            else:
                open_ = True
        return cls(frozenset(names), frozenset(keys), frozenset(scopes), open_)

    def shut(self, span: Span) -> bool:
        return not (
            self.open
            or span.name in self.names
            or span.resource.scope_name in self.scopes
            or not self.keys.isdisjoint(span.attributes)
        )


@dataclass(frozen=True, slots=True)
class Declared:
    """Every declared tool and agent convention, compiled, in the order written; `sources` is what it was
    compiled from ((origin, text) per file), which names it across processes."""

    sources: tuple[tuple[str, str], ...]
    tools: tuple[_Tool, ...]
    agents: tuple[_Agent, ...]
    tool_gate: _Gate
    agent_gate: _Gate

    def read(self, span: Span) -> DeclaredContent | None:
        """The tool execution a declared convention reads off this span, if one claims it."""
        if not self.tools or self.tool_gate.shut(span):
            return None
        for tool in self.tools:
            try:
                content = tool.read(span)
            except Exception:  # a defect of ours on a span nobody foresaw: never stop other spans
                _log_once(tool.name)
                continue
            if content is not None:
                return content
        return None

    def agent(self, span: Span) -> tuple[str, str | None] | None:
        """The agent (its name, and its run id if the convention names one) a declared agent convention
        reads off this span, if one claims it."""
        if not self.agents or self.agent_gate.shut(span):
            return None
        for agent in self.agents:
            try:
                found = agent.read(span)
            except Exception:
                _log_once(agent.name)
                continue
            if found is not None:
                return found
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools) + tuple(a.name for a in self.agents)

    def _matchers(self) -> tuple[_Matcher, ...]:
        return tuple(t.matcher for t in self.tools) + tuple(a.matcher for a in self.agents)

    def span_names(self) -> tuple[str, ...]:
        """Exact span names the conventions claim (ClickHouse chooses traces by them)."""
        return tuple(m.span_name for m in self._matchers() if m.span_name is not None)

    def span_name_patterns(self) -> tuple[str, ...]:
        """Span-name patterns of conventions that name no attribute key."""
        return tuple(m.pattern for m in self._matchers() if m.pattern is not None and not m.conditions)

    def attribute_keys(self) -> tuple[str, ...]:
        """One attribute key each convention with attribute conditions requires."""
        return tuple(m.conditions[0].key for m in self._matchers() if m.conditions)


_LOGGED: set[str] = set()


def _log_once(name: str) -> None:
    if name not in _LOGGED:
        _LOGGED.add(name)
        log.exception("conventions file: convention %r failed on a span; it is skipped for such spans", name)


def compile_file(files: list[tuple[str, str, ConventionsFile]]) -> Declared:
    """The conventions of validated files, compiled: (origin, text, model) per file."""
    tools = tuple(_tool(t) for _, _, model in files for t in model.tools)
    agents = tuple(_agent(a) for _, _, model in files for a in model.agents)
    sources = tuple((origin, text) for origin, text, _ in files)
    return Declared(sources, tools, agents, _Gate.of(tools), _Gate.of(agents))

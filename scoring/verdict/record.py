"""Verdicts: the judgement of one run against one spec (DESIGN §7), and their JSON form."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

import orjson

VERDICT_SCHEMA_VERSION = 1

Label = Literal["pass", "fail", "error"]


# Treated as immutable but not declared frozen: a frozen dataclass sets each field through
# object.__setattr__, which made building these ~7x slower on the online-scoring path (bench/README.md).
@dataclass(slots=True)
class CheckResult:
    """One check's outcome. `expected` holds the check's own arguments so it can be re-run."""

    kind: str
    target: str
    satisfied: bool
    detail: str
    expected: Any = None
    observed: Any = None


@dataclass(slots=True)
class Verdict:
    run_id: str
    trace_id: str
    task: str | None
    spec: str
    spec_fingerprint: str
    profile: str
    passed: bool | None
    value: float | None
    label: Label
    checks: tuple[CheckResult, ...]
    missing_tools: tuple[str, ...]
    additional_tools: tuple[str, ...]
    failed_argument_checks: tuple[dict[str, Any], ...]
    latency_violations: tuple[dict[str, Any], ...]
    reason: str | None
    run_version: int
    gates: tuple[CheckResult, ...] = field(default=())
    # What the run did beyond pass/fail: `reconciliation` of requests and executions (every verdict),
    # `latency_history` samples for per-task percentiles (specs with p50_ms/p95_ms/p99_ms).
    detail: dict[str, Any] = field(default_factory=dict)
    schema_version: int = VERDICT_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies every leaf, and online scoring turns every verdict into
        # JSON (store, watch streams, export); this builds the same structure without the copies.
        data = {name: _plain(getattr(self, name)) for name in _VERDICT_FIELDS}
        for key in _LIST_FIELDS:
            data[key] = list(data[key])
        return data


@dataclass(slots=True)
class TurnVerdict:
    """One turn of a conversation verdict: its run judged against the spec's turn at that place."""

    index: int  # 1-based, as "turn N" in reasons
    run_id: str
    passed: bool
    reason: str | None
    checks: tuple[CheckResult, ...]


@dataclass(slots=True)
class ConversationVerdict(Verdict):
    """A spec with `turns` judged against a conversation (issue 21). `run_id` holds the conversation id
    (the verdict is keyed on it), `run_version` the conversation's version; a run verdict carries none
    of these fields, so its JSON form is unchanged."""

    conversation_id: str = ""
    turns: tuple[TurnVerdict, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = Verdict.to_dict(self)
        data["conversation_id"] = self.conversation_id
        data["turns"] = [_plain(turn) for turn in self.turns]
        for turn in data["turns"]:
            turn["checks"] = list(turn["checks"])
        return data


def verdict_text(verdict: Verdict) -> str:
    """Compact JSON of `to_dict()`, written without building it. Online scoring writes one for every
    verdict (~1.5 kB with its reconciliation): orjson writes the dataclasses as they are, ~10x faster
    than encoding `to_dict()`; what it cannot write (integers beyond 64 bits in a spec's arguments)
    goes through the json module."""
    try:
        return orjson.dumps(verdict, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(verdict.to_dict(), separators=(",", ":"), default=str)


_VERDICT_FIELDS = tuple(f.name for f in fields(Verdict))
_LIST_FIELDS = (
    "checks",
    "gates",
    "missing_tools",
    "additional_tools",
    "failed_argument_checks",
    "latency_violations",
)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    """Dataclasses (at any depth) as dicts, containers rebuilt: the shape `asdict` gives, uncopied."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {k: _plain(v) for k, v in value.items()}
    if kind is tuple or kind is list:
        return kind(_plain(v) for v in value)
    if kind is CheckResult:
        return {
            "kind": value.kind,
            "target": value.target,
            "satisfied": value.satisfied,
            "detail": value.detail,
            "expected": _plain(value.expected),
            "observed": _plain(value.observed),
        }
    if isinstance(value, dict):
        return type(value)((k, _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_plain(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return value


def error_verdict(
    run_id: str,
    trace_id: str,
    task: str | None,
    spec: str,
    fingerprint: str,
    profile: str,
    run_version: int,
    message: str,
) -> Verdict:
    """A scorer that raised: an `error` verdict for that run and spec, never a crashed batch."""
    return Verdict(
        run_id=run_id,
        trace_id=trace_id,
        task=task,
        spec=spec,
        spec_fingerprint=fingerprint,
        profile=profile,
        passed=None,
        value=None,
        label="error",
        checks=(),
        missing_tools=(),
        additional_tools=(),
        failed_argument_checks=(),
        latency_violations=(),
        reason=f"scoring failed: {message}",
        run_version=run_version,
    )


def verdict_from_dict(data: dict[str, Any]) -> Verdict:
    """A verdict back from its JSON form (stored verdicts, saved `score --format json` output)."""
    if "turns" in data and "conversation_id" in data:
        base = verdict_from_dict({k: v for k, v in data.items() if k not in ("turns", "conversation_id")})
        turns = tuple(
            TurnVerdict(
                t["index"],
                t["run_id"],
                t["passed"],
                t.get("reason"),
                tuple(CheckResult(**c) for c in t["checks"]),
            )
            for t in data["turns"]
        )
        values = {name: getattr(base, name) for name in _VERDICT_FIELDS}
        return ConversationVerdict(**values, conversation_id=data["conversation_id"], turns=turns)
    fields = {k: v for k, v in data.items() if k in Verdict.__dataclass_fields__}
    for key in ("checks", "gates"):
        fields[key] = tuple(CheckResult(**c) for c in fields.get(key, []))
    for key in ("missing_tools", "additional_tools", "failed_argument_checks", "latency_violations"):
        fields[key] = tuple(fields.get(key, []))
    return Verdict(**fields)

"""One conversation and one spec with `turns` → one conversation verdict (issue 21, docs/checks.md).

Each turn's run is judged by the judge of a single run against the spec's turn at that place, seeing
the earlier turns' executions (a turn's `flows` may take their values from them). Flows at the top of
the spec span the conversation: each is judged in every turn that holds a call of its `to` tool and
counts against that turn. The conversation passes only when it has exactly the spec's number of turns
and every turn passes, as BFCL's multi-turn checker demands (a mistake in turn 1 that turn 2 repairs is
still caught).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Collection, Iterator

import duckdb

from scoring.checks.flows import judge_flow
from scoring.evidence.conversations import Conversation, complete_conversations, load_conversations
from scoring.evidence.runs import Evidence, Execution
from scoring.judge.run import judge
from scoring.spec.select import selects
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult, ConversationVerdict, TurnVerdict, Verdict, error_verdict

log = logging.getLogger("tracescore.scoring")

_CONVERSATIONS_PER_CHUNK = 500  # bounds memory when scoring a long history


# path -> (the state's value there as JSON text, the turn that left it so): the environment carries
# over from turn to turn, so a wrong change fails every later turn that does not undo it.
StateSince = dict[str, tuple[str, int]]


def _carried_state(
    checks: list[CheckResult], index: int, since: StateSince
) -> tuple[list[CheckResult], dict[str, str]]:
    """The turn's state checks, each failed one that an earlier turn's change explains saying so (issue
    28: the demo's turn 3 failed for turn 2's change with nothing explaining it), and each changed
    detail (old -> new); `since` is updated."""
    out, changed = [], {}
    for check in checks:
        if check.kind == "state" and isinstance(check.observed, dict) and "value" in check.observed:
            value = json.dumps(check.observed["value"], sort_keys=True)
            previous = since.get(check.target)
            first = previous[1] if previous is not None and previous[0] == value else index
            since[check.target] = (value, first)
            if not check.satisfied and first < index:
                note = f" (unchanged since turn {first} left it so: the state carries over from turn to turn)"
                changed[check.detail] = check.detail + note
                out.append(dataclasses.replace(check, detail=check.detail + note))
                continue
        out.append(check)
    return out, changed


def _turn(
    spec: Spec,
    turn_spec: Spec,
    index: int,
    conversation: Conversation,
    earlier: list[Execution],
    since: StateSince,
) -> TurnVerdict:
    evidence = dataclasses.replace(conversation.turns[index - 1], earlier=tuple(earlier))
    verdict = judge(turn_spec, evidence)
    checks, explained = _carried_state(list(verdict.checks), index, since)
    run_reason = verdict.reason or ""
    for plain, with_cause in explained.items():  # the run's reason names each failed check's detail
        run_reason = run_reason.replace(plain, with_cause, 1)
    notes = [run_reason] if run_reason and not verdict.passed else []
    passed = bool(verdict.passed)
    for flow in spec.flows or []:
        sources = [e for e in (*earlier, *evidence.executions) if e.clean and e.tool_name == flow.source_tool]
        calls = [e for e in evidence.executions if e.clean and e.tool_name == flow.target_tool]
        check = judge_flow(flow, sources, calls, require_call=False)
        if check is not None:
            checks.append(check)
            if not check.satisfied:
                passed = False
                notes.append(check.detail)
    reason = "; ".join(notes) if notes else None
    return TurnVerdict(index, evidence.run.run_id, passed, reason, tuple(checks))


def whole_conversation(conversation: Conversation) -> Evidence:
    """The conversation as one run: every turn's executions and requests, the first turn's run and tool
    definitions, the last turn's state (the environment at the end)."""
    first, last = conversation.turns[0], conversation.turns[-1]
    return Evidence(
        run=first.run,
        executions=tuple(e for turn in conversation.turns for e in turn.executions),
        requests=tuple(r for turn in conversation.turns for r in turn.requests),
        definitions=first.definitions,
        state=last.state,
    )


def judge_conversation(spec: Spec, conversation: Conversation) -> ConversationVerdict:
    turn_specs = spec.turns or []
    turns: list[TurnVerdict] = []
    earlier: list[Execution] = []
    since: StateSince = {}
    for index, turn_spec in enumerate(turn_specs[: len(conversation.turns)], 1):
        turns.append(_turn(spec, turn_spec, index, conversation, earlier, since))
        earlier.extend(conversation.turns[index - 1].executions)

    checks: list[CheckResult] = []
    expected, actual = len(turn_specs), len(conversation.turns)
    counted = expected == actual
    count_detail = (
        f"{actual} turn(s), as the spec expects"
        if counted
        else f"the conversation has {actual} turn(s), the spec expects {expected}"
    )
    checks.append(CheckResult("turns", "count", counted, count_detail, expected=expected, observed=actual))
    for flow in spec.flows or []:
        if not any(c.kind == "flows" and c.target == flow.label for t in turns for c in t.checks):
            detail = f"flow {flow.label}: no clean {flow.target_tool} call in any turn to carry the value"
            checks.append(
                CheckResult(
                    "flows",
                    flow.label,
                    False,
                    detail,
                    expected={"from": flow.source, "to": flow.target},
                    observed=[],
                )
            )

    notes = [c.detail for c in checks if not c.satisfied]
    passed = all(c.satisfied for c in checks)
    gates: tuple[CheckResult, ...] = ()
    if spec.conversation is not None and conversation.turns:
        # Judged as a run is, on every turn's executions; passes as its own spec says (its gates, and
        # a pass_threshold there may pass it with checks unmet).
        whole = judge(spec.conversation, whole_conversation(conversation))
        checks.extend(whole.checks)
        gates = whole.gates
        if not whole.passed:
            passed = False
            notes.append(f"conversation failed: {whole.reason or 'its checks failed'}")
    notes.extend(f"turn {t.index} failed: {t.reason or 'its checks failed'}" for t in turns if not t.passed)
    passed = passed and all(t.passed for t in turns)
    first = conversation.turns[0].run if conversation.turns else None
    return ConversationVerdict(
        run_id=conversation.conversation_id,
        trace_id=first.trace_id if first else "",
        task=conversation.task_id,
        spec=spec.name,
        spec_fingerprint=spec.fingerprint,
        profile=spec.profile,
        passed=passed,
        value=sum(t.passed for t in turns) / max(expected, actual, 1),
        label="pass" if passed else "fail",
        checks=tuple(checks),
        gates=gates,
        missing_tools=(),
        additional_tools=(),
        failed_argument_checks=(),
        latency_violations=(),
        reason="; ".join(notes) or None,
        run_version=conversation.version,
        conversation_id=conversation.conversation_id,
        turns=tuple(turns),
    )


def score_conversation(specs: list[Spec], conversation: Conversation) -> list[Verdict]:
    """Verdicts of the conversation specs that select its first turn; a failing scorer gives `error`."""
    verdicts: list[Verdict] = []
    if not conversation.turns:
        return verdicts
    first = conversation.turns[0].run
    for spec in specs:
        if spec.turns is None or not selects(spec.select, first):
            continue
        unread = next(((i, t.unread) for i, t in enumerate(conversation.turns, 1) if t.unread), None)
        if unread is not None:  # a turn whose trace cannot say what was called: no confident verdict
            verdict = error_verdict(
                conversation.conversation_id,
                first.trace_id,
                conversation.task_id,
                spec.name,
                spec.fingerprint,
                spec.profile,
                conversation.version,
                "",
            )
            verdicts.append(dataclasses.replace(verdict, reason=f"turn {unread[0]}: {unread[1].reason}"))
            continue
        try:
            verdicts.append(judge_conversation(spec, conversation))
        except Exception as exc:  # one broken scorer must not sink the batch
            log.exception(
                "scoring conversation %s with spec %s failed", conversation.conversation_id, spec.name
            )
            verdicts.append(
                error_verdict(
                    conversation.conversation_id,
                    first.trace_id,
                    conversation.task_id,
                    spec.name,
                    spec.fingerprint,
                    spec.profile,
                    conversation.version,
                    f"{type(exc).__name__}: {exc}",
                )
            )
    return verdicts


def score_conversations(
    connection: duckdb.DuckDBPyConnection,
    specs: list[Spec],
    *,
    conversation_ids: list[str] | None = None,
    task_id: str | None = None,
    first_turns: Collection[str] | None = None,
) -> Iterator[Verdict]:
    """Verdicts of every complete conversation (optionally some, one task's, or those whose first turn
    is one of `first_turns`) for the specs with turns."""
    specs = [spec for spec in specs if spec.turns is not None]
    if not specs:
        return
    rows = complete_conversations(
        connection, conversation_ids=conversation_ids, task_id=task_id, first_turns=first_turns
    )
    for start in range(0, len(rows), _CONVERSATIONS_PER_CHUNK):
        for conversation in load_conversations(connection, rows[start : start + _CONVERSATIONS_PER_CHUNK]):
            yield from score_conversation(specs, conversation)

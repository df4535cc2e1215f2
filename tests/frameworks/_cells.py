"""What a framework cell must show once its spans are stored, whether they were recorded or live.

The ground truth is the driver's calls.json (what each tool really received and raised, per invocation
of the agent); the stored rows are read from the file of a `tracescore serve` that received the cell's
OTLP and scored it against `specs_for(cell)`. Every cell is held to the same rules (issue #16):

- each tool call appears in `executions` exactly once, with the arguments the tool received (no
  wrapper keys), flagged as errored with the clean message when it raised, and nothing else appears
  but the framework's own internal tools;
- one run per invocation, with its task;
- where the instrumentation shows the model's requests, every request is joined to its execution;
- a `scope: leader` spec that should pass passes, a spec missing a tool fails naming it, and a spec
  expecting the tool that raised fails.

A cell that plays the delegation scenario (the harness's `DELEGATION`: a leader agent hands the question
to a member agent, whose tool call the ledger marks with its agent) is held to the same rules, and to
the `members` aspect besides: each execution's `agent_path` is the agent that made the call (the member's
`leader/member`, the leader's its name alone), the run is the leader's, a `scope: leader` spec expecting
the member's tool fails naming it (the member's execution left out), and a `scope: all` one passes.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb


@dataclass(frozen=True)
class Truth:
    cell: str
    requests: bool
    arguments: bool  # tool arguments are captured at all (content capture is off by default in some)
    error_messages: bool  # the text of a tool's exception reaches any span
    internal_tools: tuple[str, ...]
    invocations: tuple[dict[str, Any], ...]
    versions: dict[str, str]
    # The delegation scenario only: the names the spans give the leader and the member (`leader`,
    # `member`), and the tools through which the framework has the leader delegate.
    agents: dict[str, str] | None = None
    delegation_tools: tuple[str, ...] = ()

    @staticmethod
    def load(path: Path) -> Truth:
        data = json.loads(path.read_text())
        return Truth(
            data["cell"],
            data["requests"],
            data.get("arguments", True),
            data.get("error_messages", True),
            tuple(data["internal_tools"]),
            tuple(data["invocations"]),
            data["versions"],
            data.get("agents"),
            tuple(data.get("delegation_tools", ())),
        )

    @property
    def multiagent(self) -> bool:
        return self.agents is not None

    def agent_path(self, agent: str) -> str:
        """The `agent_path` an execution of this agent's call must have: the member's is under the leader."""
        assert self.agents is not None
        leader = self.agents["leader"]
        return leader if agent == LEADER else f"{leader}/{self.agents.get('member', agent)}"

    def expected(self, call: dict[str, Any]) -> tuple[str, str]:
        """What an execution of this call must store: its arguments, or NULL where none are captured."""
        return _key(call["tool"], call["arguments"] if self.arguments else None)


def specs_for(truth: Truth) -> str:
    """Three specs per cell, selecting its runs by service name (each driver names its service)."""
    cell = truth.cell
    ignore = f"ignore_tools: {json.dumps(list(truth.internal_tools))}\n" if truth.internal_tools else ""
    if truth.multiagent:
        return _delegation_specs(truth)
    return (
        f"name: {cell}/weather\n"
        f"select: {{service.name: {cell}, task: weather}}\n"
        "expected_tools: [get_weather]\n"
        f"{'arguments: {get_weather: {city: Tokyo}}' if truth.arguments else ''}\n"
        "calls: {get_weather: {exactly: 2}}\n"
        "allow_additional: false\n"
        f"{ignore}"
        "scope: leader\n"
        "---\n"
        f"name: {cell}/weather-and-booking\n"
        f"select: {{service.name: {cell}, task: weather}}\n"
        "expected_tools: [get_weather, book_flight]\n"
        "---\n"
        f"name: {cell}/booking\n"
        f"select: {{service.name: {cell}, task: booking}}\n"
        "expected_tools: [book_flight]\n"
    )


# The delegation scenario's names (tests/frameworks/drivers/_harness.py: LEADER, MEMBER).
LEADER = "coordinator"


def _delegation_specs(truth: Truth) -> str:
    """The delegation scenario's specs: every agent's executions (scope `all`), strict on the member's
    call, should pass; the leader's own (scope `leader`) lack the member's call; one more tool fails."""
    cell = truth.cell
    framework = [*truth.internal_tools, *truth.delegation_tools]
    ignore = f"ignore_tools: {json.dumps(framework)}\n" if framework else ""
    select = f"select: {{service.name: {cell}, task: delegation}}\n"
    return (
        f"name: {cell}/delegation\n"
        f"{select}"
        "expected_tools: [get_weather]\n"
        f"{'arguments: {get_weather: {city: Paris}}' if truth.arguments else ''}\n"
        "calls: {get_weather: {exactly: 1}}\n"
        "allow_additional: false\n"
        f"{ignore}"
        "scope: all\n"
        "---\n"
        f"name: {cell}/delegation-leader\n"
        f"{select}"
        "expected_tools: [get_weather]\n"
        "scope: leader\n"
        "---\n"
        f"name: {cell}/delegation-and-booking\n"
        f"{select}"
        "expected_tools: [get_weather, book_flight]\n"
    )


def _rows(connection: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cursor = connection.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _key(tool: str, arguments: Any) -> tuple[str, str]:
    return tool, json.dumps(arguments, sort_keys=True)


ASPECTS = ("runs", "executions", "arguments", "errors", "results", "requests", "verdicts")
# Judged only for the cells that play the delegation scenario.
MEMBERS = "members"
COLUMNS = (*ASPECTS, MEMBERS)


def _arguments(execution: dict[str, Any]) -> Any:
    return json.loads(execution["arguments"]) if execution["arguments"] else None


def _result(execution: dict[str, Any]) -> Any:
    return json.loads(execution["result"]) if execution["result"] is not None else None


def findings(db: Path, truth: Truth) -> dict[str, list[str]]:
    """Every way the stored rows and verdicts of this cell differ from the truth, by aspect."""
    found: dict[str, list[str]] = {aspect: [] for aspect in COLUMNS}
    framework_tools = {*truth.internal_tools, *truth.delegation_tools}
    with duckdb.connect(str(db), read_only=True) as connection:
        runs = _rows(connection, "SELECT * FROM runs WHERE service_name = ?", [truth.cell])
        # A run no invocation made (a trace that only compiled the graph, issue #27) is a run that the
        # specs selecting the service by its name alone would score.
        tasks = {invocation["task"] for invocation in truth.invocations}
        stray = [(r["task_id"], r["agent_name"], r["n_spans"]) for r in runs if r["task_id"] not in tasks]
        if stray:
            found["runs"].append(f"runs that no invocation made (task, agent, spans): {stray}")
        for invocation in truth.invocations:
            task = invocation["task"]
            mine = [r for r in runs if r["task_id"] == task]
            if len(mine) != 1:
                names = [r["agent_name"] for r in mine]
                found["runs"].append(f"{task}: {len(mine)} runs for one invocation ({names})")
                if not mine:
                    continue
            run_ids = [r["run_id"] for r in mine]
            executions = _rows(
                connection,
                "SELECT * FROM executions WHERE run_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY start_time",
                [run_ids],
            )
            ours = [e for e in executions if e["tool_name"] not in framework_tools]
            if truth.multiagent:
                found[MEMBERS] += _members(truth, task, mine, executions)
            calls = invocation["calls"]
            names = Counter(e["tool_name"] for e in ours)
            if names != Counter(c["tool"] for c in calls):
                found["executions"].append(
                    f"{task}: tools {sorted(names.elements())} for calls of "
                    f"{sorted(c['tool'] for c in calls)}"
                )
            stored = Counter(_key(e["tool_name"], _arguments(e)) for e in ours)
            expected = Counter(truth.expected(c) for c in calls)
            if names == Counter(c["tool"] for c in calls) and stored != expected:
                found["arguments"].append(
                    f"{task}: {sorted(stored.elements())} != {sorted(expected.elements())}"
                )
            for call in calls:
                for execution in (
                    e for e in ours if _key(e["tool_name"], _arguments(e)) == truth.expected(call)
                ):
                    if bool(call["error"]) != execution["error"]:
                        found["errors"].append(
                            f"{task}: {call['tool']} error={execution['error']}, raised: {call['error']}"
                        )
                    elif call["error"]:
                        # What an errored call's result holds is the framework's (the exception's text, a
                        # redacted notice, nothing): the flag, and the message where any span has it, count.
                        message = execution["error_message"] or ""
                        if truth.error_messages and (call["error"] not in message or "Traceback" in message):
                            found["errors"].append(f"{task}: {call['tool']} error message {message[:200]!r}")
                    else:
                        wanted = call.get("returned") if truth.arguments else None
                        if _result(execution) != wanted:
                            found["results"].append(
                                f"{task}: {call['tool']} result {execution['result']!r}, returned {wanted!r}"
                            )
            if truth.requests:
                requests = _rows(
                    connection,
                    "SELECT * FROM tool_requests WHERE run_id IN (SELECT unnest(?::VARCHAR[]))",
                    [run_ids],
                )
                unjoined = [r["tool_name"] for r in requests if r["execution_span_id"] is None]
                if unjoined:
                    found["requests"].append(f"{task}: requests never joined to an execution: {unjoined}")
                joined = {r["execution_span_id"] for r in requests}
                orphans = [e["tool_name"] for e in ours if e["span_id"] not in joined]
                if orphans:
                    found["requests"].append(f"{task}: executions with no request: {orphans}")
        verdicts = {
            v["spec"]: v
            for v in _rows(
                connection,
                "SELECT spec, passed, reason FROM verdicts WHERE spec LIKE ? || '/%'",
                [truth.cell],
            )
        }
    cell = truth.cell
    if truth.multiagent:
        expectations = {
            f"{cell}/delegation": ("verdicts", True, ()),
            f"{cell}/delegation-and-booking": ("verdicts", False, ("book_flight",)),
            f"{cell}/delegation-leader": (MEMBERS, False, ("get_weather", "member execution(s) left out")),
        }
    else:
        expectations = {
            f"{cell}/weather": ("verdicts", True, ()),
            f"{cell}/weather-and-booking": ("verdicts", False, ("book_flight",)),
            f"{cell}/booking": ("verdicts", False, ("book_flight",)),
        }
    for spec, (aspect, passed, named) in expectations.items():
        verdict = verdicts.get(spec)
        if verdict is None:
            found[aspect].append(f"{spec}: no verdict")
        elif verdict["passed"] is not passed:
            found[aspect].append(f"{spec}: passed={verdict['passed']} ({verdict['reason']})")
        else:
            for name in named:
                if name not in (verdict["reason"] or ""):
                    found[aspect].append(f"{spec}: the reason does not name {name}: {verdict['reason']}")
    return found


def _members(
    truth: Truth, task: str, runs: list[dict[str, Any]], executions: list[dict[str, Any]]
) -> list[str]:
    """How the stored agents of one delegation invocation differ from who made each call."""
    assert truth.agents is not None
    problems = []
    leader = truth.agents["leader"]
    if [r["agent_name"] for r in runs] != [leader]:
        problems.append(f"{task}: the run's agent is {[r['agent_name'] for r in runs]}, not {leader!r}")
    for call in (
        c for invocation in truth.invocations if invocation["task"] == task for c in invocation["calls"]
    ):
        wanted = truth.agent_path(call["agent"]) if call.get("agent") else None
        for execution in executions:
            mine = _key(execution["tool_name"], _arguments(execution)) == truth.expected(call)
            if wanted and mine and execution["agent_path"] != wanted:
                problems.append(
                    f"{task}: {call['tool']} by {call['agent']}: agent_path "
                    f"{execution['agent_path']!r}, not {wanted!r}"
                )
    for tool in truth.delegation_tools:
        paths = [e["agent_path"] for e in executions if e["tool_name"] == tool]
        if paths != [leader]:
            problems.append(f"{task}: the leader's delegation {tool}: agent paths {paths}, not [{leader!r}]")
    return problems


def problems(db: Path, truth: Truth) -> list[str]:
    """Every way the stored rows and verdicts of this cell differ from the truth; empty when right."""
    return [f"{aspect}: {problem}" for aspect, found in findings(db, truth).items() for problem in found]


# --- the compatibility table of docs/integrations.md ------------------------------------------------------

TABLE_START = "<!-- framework matrix: generated by `python -m tests.frameworks.table`, do not edit -->"
TABLE_END = "<!-- end of framework matrix -->"


def table(rows: list[tuple[Truth, dict[str, list[str]]]], gaps: dict[str, str]) -> str:
    """One line per cell: what tracescore reads right from it, as the recorded traces show."""
    lines = [
        TABLE_START,
        "",
        "| cell | versions | " + " | ".join(COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    for truth, found in rows:
        marks = {aspect: "**no**" if found[aspect] else "yes" for aspect in COLUMNS}
        if not truth.multiagent:
            marks[MEMBERS] = "—"
        if not truth.arguments:
            marks["arguments"] = marks["results"] = "not captured"
        if not truth.requests:
            marks["requests"] = "not captured"
        if not truth.error_messages and marks["errors"] == "yes":
            marks["errors"] = "yes (no message)"
        pinned = ", ".join(f"{name} {version}" for name, version in truth.versions.items())
        lines.append(f"| `{truth.cell}` | {pinned} | " + " | ".join(marks[a] for a in COLUMNS) + " |")
    if gaps:
        lines += ["", "Known gaps (their tests are expected to fail until fixed):", ""]
        lines += [f"- `{cell}`: {gap}." for cell, gap in sorted(gaps.items())]
    lines += ["", TABLE_END]
    return "\n".join(lines)

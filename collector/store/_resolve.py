"""Run resolution for one complete trace (DESIGN §4): a pure function of what the trace holds.

Which run each execution and request belongs to, the agent path above it, the task, rounds of
requests, call ids recovered from requests, and one summary row per run in the trace.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from collector.model.domain import Arguments, SpanNode, ToolExecution, ToolOutcome, ToolRequest
from collector.store._members import agents_run_by_tools, with_hidden_agents
from collector.store._same_call import (
    canonical,
    drop_nested_duplicates,
    drop_transport_duplicates,
    reported_failure,
)
from collector.store._setup_runs import only_sets_up
from collector.store._turns import conversation_place


# Treated as immutable but not declared frozen: a frozen dataclass sets each field through
# object.__setattr__, which made building these ~7x slower on the online-scoring path (bench/README.md).
@dataclass(slots=True)
class Placement:
    run_id: str
    task_id: str | None
    agent_path: str | None
    agent_name: str | None
    session_id: str | None


@dataclass(slots=True)
class ResolvedExecution:
    execution: ToolExecution
    placement: Placement
    call_id: str | None
    call_id_source: str | None
    # The best arguments of the call: the span's own JSON object, else its joined request's (issue #16).
    arguments: Arguments
    arguments_source: str | None


@dataclass(slots=True)
class ResolvedRequest:
    request: ToolRequest
    placement: Placement
    round: int
    execution_span_id: str | None
    # Which of that span's calls carried it out (ToolExecution.call_index); None when none did.
    execution_call_index: int | None = None


@dataclass(slots=True)
class RunSummary:
    run_id: str
    trace_id: str
    root_span_id: str
    task_id: str | None
    service_name: str | None
    agent_name: str | None
    session_id: str | None
    start_ns: int
    end_ns: int
    n_spans: int = 0
    n_executions: int = 0
    n_requests: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)
    # The conversation this run is a turn of, its place there, and the harness's mark of the last turn
    # (docs/storage.md, "Conversations"): read off the run's attributes once the trace is resolved.
    conversation_id: str | None = None
    turn_index: int | None = None
    last_turn: bool = False


@dataclass(slots=True)
class Resolution:
    executions: list[ResolvedExecution]
    requests: list[ResolvedRequest]
    runs: list[RunSummary]


def _distinct_agents(agents: list[SpanNode]) -> list[SpanNode]:
    """The agents above a span, outermost first, with an agent directly inside an agent of the same name
    taken as that same agent: two instrumentations of one framework each open an agent span (ADK's own
    `invoke_agent` under OpenInference's `agent_run`), and LangGraph's OpenLLMetry spans nest a
    `LangGraph.workflow` under `invoke_agent LangGraph` (issue #16, item 4). Neither is a member."""
    distinct: list[SpanNode] = []
    for node in agents:
        if distinct and node.agent and distinct[-1].agent and node.agent.name == distinct[-1].agent.name:
            continue
        distinct.append(node)
    return distinct


class _Tree:
    def __init__(self, trace_id: str, nodes: dict[str, SpanNode]) -> None:
        self.trace_id = trace_id
        nodes = with_hidden_agents(nodes)
        self.nodes = nodes
        self._chains: dict[str, list[SpanNode]] = {}
        self._inner: dict[str, str] | None = None
        self._placements: dict[str, Placement] = {}
        explicit = sorted((n.start_ns, n.span_id) for n in nodes.values() if n.explicit_run_id)
        self.trace_explicit = nodes[explicit[0][1]].explicit_run_id if explicit else None
        outermost = {a.span_id for n in nodes.values() if n.agent and (a := self.outermost_agent(n.span_id))}
        self.only_agent = nodes[next(iter(outermost))] if len(outermost) == 1 else None

    def chain(self, span_id: str) -> list[SpanNode]:
        """The span and its ancestors inside this trace, nearest first (cycles cut)."""
        cached = self._chains.get(span_id)
        if cached is not None:
            return cached
        chain: list[SpanNode] = []
        seen: set[str] = set()
        current: str | None = span_id
        while current is not None and current in self.nodes and current not in seen:
            seen.add(current)
            node = self.nodes[current]
            chain.append(node)
            current = node.parent_span_id
        self._chains[span_id] = chain
        return chain

    def inner_run_id(self, agent_span_id: str) -> str | None:
        """A run id written below the agent span (ADK's invocation id), earliest span first."""
        if self._inner is None:
            self._inner = {}
            for node in sorted(self.nodes.values(), key=lambda n: n.start_ns):
                if node.inner_run_id:
                    for ancestor in self.chain(node.span_id)[1:]:
                        self._inner.setdefault(ancestor.span_id, node.inner_run_id)
        return self._inner.get(agent_span_id)

    def outermost_agent(self, span_id: str) -> SpanNode | None:
        agents = [n for n in self.chain(span_id) if n.agent]
        return agents[-1] if agents else None

    def placement(self, span_id: str) -> Placement:
        """Where a span belongs; a span that adds nothing to its parent's context shares its placement."""
        cached = self._placements.get(span_id)
        if cached is not None:
            return cached
        node = self.nodes[span_id]
        parent = self._placements.get(node.parent_span_id or "")
        if (
            parent is not None
            and node.agent is None
            and not node.explicit_run_id
            and node.task_id in (None, parent.task_id)
            and node.session_id in (None, parent.session_id)
        ):
            self._placements[span_id] = parent
            return parent
        placement = self._place(span_id)
        self._placements[span_id] = placement
        return placement

    def _place(self, span_id: str) -> Placement:
        chain = self.chain(span_id)
        agents = _distinct_agents([n for n in reversed(chain) if n.agent])
        explicit = next((n.explicit_run_id for n in chain if n.explicit_run_id), None) or self.trace_explicit
        run_root = agents[0] if agents else self.only_agent
        if explicit:
            run_id = explicit
        elif run_root is not None and run_root.agent is not None:
            run_id = run_root.agent.run_id or self.inner_run_id(run_root.span_id) or run_root.span_id
        else:
            run_id = self.trace_id
        task = next((n.task_id for n in chain if n.task_id), None)
        session = next((n.session_id for n in chain if n.session_id), None)
        path = "/".join(a.agent.name for a in agents if a.agent) or None
        return Placement(
            run_id=run_id,
            task_id=task,
            agent_path=path,
            agent_name=agents[-1].agent.name if agents and agents[-1].agent else None,
            session_id=session,
        )


def _called(tree: _Tree, execution: ToolExecution) -> bool:
    """An execution that is an agent's own span (`agent_call`) is a call only where an agent is above it."""
    return not execution.agent_call or any(n.agent for n in tree.chain(execution.span_id)[1:])


def placed(placements: dict[str, Placement], execution: ToolExecution) -> Placement:
    """Where an execution belongs: its span's placement, but an agent's call is its caller's (placed
    where the agent's span hangs, not inside the agent it ran)."""
    caller = execution.parent_span_id
    if execution.agent_call and caller is not None and caller in placements:
        return placements[caller]
    return placements[execution.span_id]


def _started_before(tree: _Tree, request: ToolRequest, execution: ToolExecution) -> bool:
    node = tree.nodes.get(request.span_id)
    return node is not None and node.start_ns <= execution.start_ns


def _link_requests(
    tree: _Tree,
    executions: list[ToolExecution],
    requests: list[ToolRequest],
    placements: dict[str, Placement],
) -> tuple[dict[tuple[str, int], tuple[str | None, str | None]], dict[tuple[str, int], tuple[str, int]]]:
    """Match executions to requests: by call id, else by (name, arguments, order) to recover the id.

    A request is a candidate for an execution that ended after it was made, or that started after the
    span that made it started: some frameworks keep the model call's span open while its tools run (ADK's
    `call_llm` in schema v1), so a tool that raises ends before the span that asked for it ends (issue
    #16, item 6). An execution whose call id no request carries is matched the second way among the
    requests that carry no id (OpenInference's Haystack LLM spans give none; its ToolInvoker span does).

    Executions are keyed by `ToolExecution.key` (a span may record several calls)."""
    call_ids: dict[tuple[str, int], tuple[str | None, str | None]] = {}
    linked: dict[tuple[str, int], tuple[str, int]] = {}
    by_call_id: dict[tuple[str, str], ToolRequest] = {}
    for request in requests:
        if request.call_id:
            by_call_id.setdefault((placements[request.span_id].run_id, request.call_id), request)
    ordered = sorted(executions, key=lambda e: (e.start_ns, e.span_id, e.call_index))
    by_id: set[tuple[str, int]] = set()
    for execution in ordered:
        run_id = placed(placements, execution).run_id
        if execution.call_id:
            call_ids[execution.key] = (execution.call_id, "span")
            matched = by_call_id.get((run_id, execution.call_id))
            if matched is not None:
                by_id.add(execution.key)
                linked.setdefault((matched.span_id, matched.position), execution.key)
    for execution in ordered:
        if execution.key in by_id:
            continue
        run_id = placed(placements, execution).run_id
        candidates = [
            r
            for r in requests
            if (r.span_id, r.position) not in linked
            and not (execution.call_id and r.call_id)
            and r.tool_name == execution.tool_name
            and placements[r.span_id].run_id == run_id
            and (r.requested_ns <= execution.end_ns or _started_before(tree, r, execution))
        ]
        candidates.sort(key=lambda r: (r.requested_ns, r.position))
        wanted = canonical(execution.arguments.value) if execution.arguments.value is not None else None
        chosen = next((r for r in candidates if canonical(r.arguments.value) == wanted), None)
        if chosen is None and candidates:
            chosen = candidates[0]
        if execution.call_id:
            if chosen is not None:
                linked[(chosen.span_id, chosen.position)] = execution.key
        elif chosen is not None:
            linked[(chosen.span_id, chosen.position)] = execution.key
            call_ids[execution.key] = (chosen.call_id, "request" if chosen.call_id else None)
        else:
            call_ids[execution.key] = (None, None)
    return call_ids, linked


def best_arguments(execution: ToolExecution, request: ToolRequest | None) -> tuple[Arguments, str | None]:
    """The arguments to store for an execution, and where they came from (`span` or `request`).

    The span's own arguments win when they are a JSON object. Some instrumentations record something
    else there: the bare text of a one-string-parameter tool (OpenInference on LangChain records `Paris`
    for `{"city": "Paris"}`), or nothing when tool content is not captured but chat content is. Then the
    request the execution was joined to says what the model asked the tool to do, as an object. The
    span's own text stays in `arguments_raw`."""
    own = execution.arguments
    if isinstance(own.value, dict):
        return own, "span"
    if request is not None and isinstance(request.arguments.value, dict):
        return Arguments(value=request.arguments.value, raw=own.raw, raw_is_value=False), "request"
    return own, ("span" if own.present else None)


def resolve_trace(
    trace_id: str,
    nodes: dict[str, SpanNode],
    executions: Iterable[ToolExecution],
    requests: Iterable[ToolRequest],
    outcomes: Iterable[ToolOutcome] = (),
) -> Resolution:
    execution_list = list(executions)
    tree = _Tree(trace_id, agents_run_by_tools(nodes, execution_list))
    kept = [e for e in drop_transport_duplicates(tree.chain, execution_list) if _called(tree, e)]
    request_list = drop_nested_duplicates(tree.chain, list(requests))
    # Parents first, so most spans reuse their parent's placement (one sort serves both passes).
    ordered = sorted(tree.nodes.values(), key=lambda n: (len(tree.chain(n.span_id)), n.start_ns))
    placements = {node.span_id: tree.placement(node.span_id) for node in ordered}
    call_ids, linked = _link_requests(tree, kept, request_list, placements)

    rounds: dict[str, dict[str, int]] = {}
    chat_spans = sorted({(r.requested_ns, r.span_id) for r in request_list})
    for _, span_id in chat_spans:
        run_rounds = rounds.setdefault(placements[span_id].run_id, {})
        run_rounds.setdefault(span_id, len(run_rounds) + 1)

    runs: dict[str, RunSummary] = {}
    for node in ordered:
        place = placements[node.span_id]
        summary = runs.get(place.run_id)
        if summary is None:
            root = tree.outermost_agent(node.span_id)
            if (
                root is None
                and tree.only_agent
                and placements[tree.only_agent.span_id].run_id == place.run_id
            ):
                root = tree.only_agent
            root = root or node
            root_place = placements[root.span_id]
            summary = runs[place.run_id] = RunSummary(
                run_id=place.run_id,
                trace_id=trace_id,
                root_span_id=root.span_id,
                task_id=root_place.task_id,
                service_name=root.service_name,
                agent_name=root.agent.name if root.agent else None,
                session_id=root_place.session_id,
                start_ns=node.start_ns,
                end_ns=node.end_ns,
                attributes=dict(root.attributes_for_select),
            )
        if node.attributes_for_select:
            for key, value in node.attributes_for_select.items():
                summary.attributes.setdefault(key, value)
        summary.n_spans += 1
        summary.start_ns = min(summary.start_ns, node.start_ns)
        summary.end_ns = max(summary.end_ns, node.end_ns)
        summary.task_id = summary.task_id or place.task_id
        summary.session_id = summary.session_id or place.session_id

    requested_by = {execution_span: key for key, execution_span in linked.items()}
    by_key = {(r.span_id, r.position): r for r in request_list}
    failures = {o.call_id: o for o in outcomes if o.error}
    resolved_executions = []
    for recognised in kept:
        place = placed(placements, recognised)
        runs[place.run_id].n_executions += 1
        call_id, source = call_ids[recognised.key]
        execution = recognised
        if failures and call_id is not None:
            execution = reported_failure(recognised, failures.get(call_id))
        request_key = requested_by.get(execution.key)
        arguments, arguments_source = best_arguments(
            execution, by_key[request_key] if request_key is not None else None
        )
        resolved_executions.append(
            ResolvedExecution(execution, place, call_id, source, arguments, arguments_source)
        )
    resolved_requests = []
    for request in request_list:
        place = placements[request.span_id]
        runs[place.run_id].n_requests += 1
        execution_key = linked.get((request.span_id, request.position))
        resolved_requests.append(
            ResolvedRequest(
                request,
                place,
                rounds[place.run_id][request.span_id],
                execution_key[0] if execution_key else None,
                execution_key[1] if execution_key else None,
            )
        )
    for summary in runs.values():
        summary.conversation_id, summary.turn_index, summary.last_turn = conversation_place(
            summary.attributes, summary.session_id
        )
    kept_runs = [r for r in runs.values() if not _set_up_only(r, ordered, placements, tree)]
    return Resolution(resolved_executions, resolved_requests, kept_runs)


def _set_up_only(
    summary: RunSummary, ordered: list[SpanNode], placements: dict[str, Placement], tree: _Tree
) -> bool:
    """A run that only built an agent (collector/store/_setup_runs.py): not a run."""
    if summary.n_executions or summary.n_requests:
        return False
    spans = (n.span_id for n in ordered if placements[n.span_id].run_id == summary.run_id)
    return only_sets_up(spans, tree.chain)

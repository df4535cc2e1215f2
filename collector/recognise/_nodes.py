"""The per-span facts run resolution needs: is it an agent, which run and task does it name."""

from __future__ import annotations

from typing import Any

from collector.model.domain import UNNAMED_WORKFLOW, AgentInfo, Span, SpanNode
from collector.recognise import _openai_agents_js
from collector.recognise._content import load_json_text
from collector.recognise.declared import active as declared_conventions

# Keys that carry a framework's own id for one agent run (DESIGN §4).
_AGENT_RUN_ID_KEYS = ("gen_ai.agent.call.id", "agno.run.id", "gcp.vertex.agent.invocation_id")
_AGENT_NAME_KEYS = (
    "gen_ai.agent.name",
    "agent.name",
    "graph.node.name",
    "agent_name",
    "traceloop.entity.name",
    "gen_ai.workflow.name",
)
_SESSION_KEYS = (
    "session.id",
    "gen_ai.conversation.id",
    "traceloop.association.properties.session_id",
    "tracescore.session.id",
)


def _first_text(attrs: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    return None


# OpenInference's processor for the OpenAI Agents SDK: it opens one AGENT span per SDK trace (the workflow,
# named after the trace, no `agent.name`) above the real agent spans. OpenLLMetry's processor
# (opentelemetry-instrumentation-openai-agents 0.62, `_hooks.py`) opens the same workflow span, marked
# `traceloop.span.kind = workflow`, above its `{agent}.agent` spans. Neither exports a run id.
_OPENAI_AGENTS_SCOPE = "openinference.instrumentation.openai_agents"
_OPENLLMETRY_OPENAI_AGENTS_SCOPE = "opentelemetry.instrumentation.openai_agents"
_OPENAI_AGENTS_SCOPES = frozenset(
    {_OPENAI_AGENTS_SCOPE, _OPENLLMETRY_OPENAI_AGENTS_SCOPE, _openai_agents_js.SCOPE}
)


def _openai_agents_workflow(span: Span) -> bool:
    scope, attrs = span.resource.scope_name, span.attributes
    if scope == _OPENAI_AGENTS_SCOPE:
        return attrs.get("openinference.span.kind") == "AGENT" and "agent.name" not in attrs
    if scope == _openai_agents_js.SCOPE:
        return _openai_agents_js.is_workflow(span)
    return scope == _OPENLLMETRY_OPENAI_AGENTS_SCOPE and attrs.get("traceloop.span.kind") == "workflow"


# OpenInference's LangChain instrumentation (openinference-instrumentation-langchain 0.1.80, `_tracer.py`)
# copies LangGraph's run metadata onto each span as JSON text in `metadata`: the graph's own invocation
# has `ls_integration` (`langgraph`, or `langchain_create_agent` for LangChain 1.x's `create_agent`) and no
# node; every span inside it names its node (`langgraph_node`). A node called `agent` is also given the
# kind AGENT, once per model turn: one invocation is the graph, not each turn (issue #16, item 2).
_LANGCHAIN_SCOPE = "openinference.instrumentation.langchain"
# OpenInference's LangChain.js instrumentation (`@arizeai/openinference-instrumentation-langchain` 4.1.1,
# `tracer.ts`) copies the same metadata, which LangGraph.js writes alike (`ls_integration`,
# `langgraph_node`, `langgraph_checkpoint_ns`); it names a span's kind by the run's type, never AGENT
# for a tool or a node, so the graph is the agent there too.
_LANGCHAIN_SCOPES = frozenset({_LANGCHAIN_SCOPE, "@arizeai/openinference-instrumentation-langchain"})
_GRAPH_INTEGRATIONS = frozenset({"langgraph", "langchain_create_agent"})


def _langgraph_metadata(span: Span) -> dict[str, Any] | None:
    if span.resource.scope_name not in _LANGCHAIN_SCOPES:
        return None
    text = span.attributes.get("metadata")
    if not isinstance(text, str) or "ls_integration" not in text:
        return None
    metadata = load_json_text(text)
    return metadata if isinstance(metadata, dict) else None


def _langgraph_role(span: Span) -> str | None:
    """`graph` for a LangGraph invocation, `node` for a span inside one, None for anything else."""
    metadata = _langgraph_metadata(span)
    if metadata is None:
        return None
    if "langgraph_node" in metadata:
        return "node"
    return "graph" if metadata.get("ls_integration") in _GRAPH_INTEGRATIONS else None


# OpenLLMetry's LangChain instrumentation (opentelemetry-instrumentation-langchain 0.62.4) copies the same
# run metadata as association properties, one attribute per key.
_OPENLLMETRY_LANGCHAIN_SCOPE = "opentelemetry.instrumentation.langchain"
_OPENLLMETRY_NAMESPACE = "traceloop.association.properties.langgraph_checkpoint_ns"


def _langgraph_nesting(span: Span) -> tuple[int, str | None]:
    """How deep in nested graphs a LangGraph span's node sits, and the span's name as an agent.

    LangGraph names each node run `{node}:{task id}` in `langgraph_checkpoint_ns`, joined with `|` to its
    parent graphs' nodes: a graph called from a node of another graph (a subgraph, or an agent run by a
    tool, the supervisor pattern) gives its own nodes one segment more than the node it runs in. The
    graph's own span carries only the outer node's namespace, so it is found by its children, at run
    resolution (issue #16's multi-agent case)."""
    scope = span.resource.scope_name
    if scope == _OPENLLMETRY_LANGCHAIN_SCOPE:
        namespace = span.attributes.get(_OPENLLMETRY_NAMESPACE)
        name = _first_text(span.attributes, ("traceloop.entity.name",))
    elif scope in _LANGCHAIN_SCOPES:
        metadata = _langgraph_metadata(span)
        namespace = metadata.get("langgraph_checkpoint_ns") if metadata else None
        name = span.name
    else:
        return 0, None
    if not isinstance(namespace, str) or not namespace:
        return 0, None
    return namespace.count("|") + 1, name or span.name


# Agents whose instrumentation gives them no AGENT kind, only a CHAIN span (issue #16):
# - LlamaIndex's workflow agents (FunctionAgent, ReActAgent, CodeActAgent, AgentWorkflow):
#   openinference-instrumentation-llama-index 4.6.1 marks only the legacy `BaseAgent` classes as AGENT;
#   the workflow's `<Agent>.run` span is a CHAIN whose input starts an `AgentWorkflowStartEvent`.
# - DSPy's ReAct and CodeAct modules (openinference-instrumentation-dspy 0.1.48): `ReAct.forward`.
_LLAMA_INDEX_SCOPE = "openinference.instrumentation.llama_index"
_DSPY_SCOPE = "openinference.instrumentation.dspy"
# Haystack's Agent: `Agent.run` (a CHAIN) through openinference-instrumentation-haystack 0.1.46, and
# `haystack.agent.run` in Haystack 3's own tracing.
_HAYSTACK_OPENINFERENCE_SCOPE = "openinference.instrumentation.haystack"
_HAYSTACK_AGENT_SPAN = "haystack.agent.run"
_DSPY_AGENTS = frozenset({"ReAct.forward", "ReAct.aforward", "CodeAct.forward", "CodeAct.aforward"})


def _chain_agent(span: Span) -> bool:
    scope = span.resource.scope_name
    if scope == _HAYSTACK_OPENINFERENCE_SCOPE:
        return span.name == "Agent.run"
    if scope == _DSPY_SCOPE:
        return span.name in _DSPY_AGENTS
    if scope == _LLAMA_INDEX_SCOPE and span.name.endswith(".run"):
        value = load_json_text(span.attributes.get("input.value"))
        start = value.get("start_event") if isinstance(value, dict) else None
        return isinstance(start, str) and start.startswith("AgentWorkflowStartEvent")
    return False


# A workflow: one invocation of an agent system, above its agents: the "Invoke workflow span" of
# open-telemetry/semantic-conventions v1.41.0 (`docs/gen-ai/gen-ai-agent-spans.md`), an internal agent span
# since semantic-conventions-genai v0.1.0. ADK's telemetry schema v2 (google-adk 2.13,
# `telemetry/_schema_version.py`) opens `invoke_workflow {root agent}` with `gen_ai.workflow.name`; its
# schema v1 a bare `invocation` span. Under it, the root agent and each sub-agent it transferred to are
# sibling `invoke_agent` spans: the workflow makes them one run, led by the root agent, the rest members.
_WORKFLOW_OPERATION = "invoke_workflow"
_ADK_SCOPE = "gcp.vertex.agent"
_ADK_V1_INVOCATION = "invocation"


def _adk_v1_invocation(span: Span) -> bool:
    return span.resource.scope_name == _ADK_SCOPE and span.name == _ADK_V1_INVOCATION


def _unmarked_workflow(span: Span) -> bool:
    """A workflow span that lost its operation: OpenLIT's LangGraph instrumentation (openlit 1.45) sets
    `gen_ai.operation.name = invoke_workflow` only when the graph returns, so the span of a graph that
    raised has the span name `invoke_workflow {gen_ai.workflow.name}` and the workflow name alone."""
    return span.name.startswith("invoke_workflow ") and "gen_ai.workflow.name" in span.attributes


# Pydantic Logfire's span of the OpenAI Agents SDK's `AgentSpanData` (logfire 5.4.0,
# `integrations/openai_agents.py`): template `Agent run: {name!r}`, the agent's name in `name`.
_LOGFIRE_AGENT_TEMPLATE = "Agent run: {name!r}"


def _logfire_agent(span: Span) -> bool:
    attrs = span.attributes
    return attrs.get("logfire.msg_template") == _LOGFIRE_AGENT_TEMPLATE and isinstance(attrs.get("name"), str)


def is_agent_span(span: Span) -> bool:
    attrs = span.attributes
    kind = attrs.get("openinference.span.kind")
    if kind == "AGENT" and span.resource.scope_name == _LANGCHAIN_SCOPE and "tool.name" in attrs:
        return False  # a tool whose name says `agent` (see conventions.py, `_openinference`)
    if _openai_agents_workflow(span):
        return False  # the workflow is not an agent: it would head every agent path and hide the leader
    role = _langgraph_role(span)
    if role is not None:
        return role == "graph"
    if kind == "CHAIN" and _chain_agent(span):
        return True
    if span.name == _HAYSTACK_AGENT_SPAN and "haystack.agent.max_steps" in attrs:
        return True
    if _adk_v1_invocation(span):
        return True
    return (
        attrs.get("gen_ai.operation.name") in ("invoke_agent", _WORKFLOW_OPERATION)
        or _unmarked_workflow(span)
        or _logfire_agent(span)
        or attrs.get("openinference.span.kind") == "AGENT"
        or attrs.get("traceloop.span.kind") in ("agent", "workflow")
        or span.name == "agent run"  # pydantic-ai instrumentation v2
    )


def _agent_run_id(span: Span) -> str | None:
    run_id = _first_text(span.attributes, _AGENT_RUN_ID_KEYS)
    if run_id is None and (span.resource.scope_name in _OPENAI_AGENTS_SCOPES or _logfire_agent(span)):
        # No run id is exported; one SDK trace is one workflow, so the agents a handoff chains (siblings
        # under the workflow) stay one run.
        return span.trace_id
    return run_id


# OpenInference's CrewAI instrumentation names the AGENT span after a method or the task's text
# (`assistant._execute_core`, `assistant.<task>.execute`); the agent's role is `graph.node.id`. (Agno's
# OpenInference puts an id there, so the key is read for CrewAI's scopes only.)
_CREWAI_SCOPE = "openinference.instrumentation.crewai"
# OpenInference's AutoGen AgentChat instrumentation (0.1.22) names the AGENT span
# `{agent}.on_messages_stream`.
_AUTOGEN_SCOPE = "openinference.instrumentation.autogen_agentchat"


def _agent_name(span: Span) -> str:
    if _adk_v1_invocation(span):
        return UNNAMED_WORKFLOW
    if span.resource.scope_name.startswith(_CREWAI_SCOPE):
        role = _first_text(span.attributes, ("graph.node.id",))
        if role:
            return role
    name = _first_text(span.attributes, _AGENT_NAME_KEYS)
    if name:
        return name
    if _logfire_agent(span):
        return str(span.attributes["name"])
    for prefix in ("invoke_agent ", "invoke_workflow ", "agent run"):
        if span.name.startswith(prefix) and span.name != prefix.strip():
            return span.name.removeprefix(prefix)
    if span.name == _HAYSTACK_AGENT_SPAN:
        return "Agent"
    if span.resource.scope_name == _AUTOGEN_SCOPE:  # `assistant.on_messages_stream`
        return span.name.removesuffix(".on_messages_stream")
    name = span.name.removesuffix(".run").removesuffix(".agent")
    return name.removesuffix(".aforward").removesuffix(".forward") if span.name in _DSPY_AGENTS else name


# Any of these on a span makes it more than a plain link in the tree.
_NODE_KEYS = frozenset(
    {"tracescore.run.id", "tracescore.task.id", "gcp.vertex.agent.invocation_id", *_SESSION_KEYS}
)


def _resource_task(span: Span) -> str | None:
    value = span.resource.attributes.get("tracescore.task.id")
    return None if value is None or value == "" else str(value)


# CrewAI's delegation tools (crewai 1.15, `tools/agent_tools/`): `Delegate work to coworker` and `Ask
# question to coworker` take `coworker` (the role of the agent to run) beside `task` or `question` and
# `context`, and run that agent (`BaseAgentTool._execute` calls its `execute_task`) inside the tool call.
# A list written as text (`[a, b]`) runs its first agent, as `_get_coworker` reads it.
_COWORKER_QUESTIONS = ("task", "question")


def _crewai_coworker(span: Span) -> str | None:
    attrs = span.attributes
    if (
        not span.resource.scope_name.startswith(_CREWAI_SCOPE)
        or attrs.get("openinference.span.kind") != "TOOL"
    ):
        return None
    arguments = load_json_text(attrs.get("input.value"))
    if not isinstance(arguments, dict) or not any(k in arguments for k in _COWORKER_QUESTIONS):
        return None
    coworker = arguments.get("coworker")
    if not isinstance(coworker, str):
        return None
    if coworker.startswith("[") and coworker.endswith("]"):
        coworker = coworker[1:-1].split(",")[0]
    return coworker.strip() or None


# The OTel GenAI `create_agent` operation (gen-ai-agent-spans.md, "Create agent span") builds an agent and
# runs nothing. OpenLLMetry's LangChain instrumentation (0.62.4) and OpenLIT's (1.45) open one, in a trace
# of its own, each time LangGraph compiles an agent graph (`create_react_agent`, `create_agent`).
_SETUP_OPERATIONS = frozenset({"create_agent"})


def is_setup_span(span: Span) -> bool:
    return span.attributes.get("gen_ai.operation.name") in _SETUP_OPERATIONS


def span_node(span: Span) -> SpanNode:
    attrs = span.attributes
    graph_depth, graph_name = _langgraph_nesting(span)
    declared = declared_conventions.current()
    declared_agent = declared.agent(span) if declared is not None else None
    if (
        declared_agent is None
        and span.parent_span_id is not None
        and _NODE_KEYS.isdisjoint(attrs)
        and not is_agent_span(span)
    ):
        # Most spans (tools, chats) only place themselves under their parent: skip the key lookups.
        return SpanNode(
            span.span_id,
            span.parent_span_id,
            span.start_ns,
            span.end_ns,
            None,
            None,
            _resource_task(span),
            None,
            span.resource.service_name,
            graph_depth=graph_depth,
            graph_name=graph_name,
            delegates_to=_crewai_coworker(span),
            setup=is_setup_span(span),
        )
    agent = None
    if declared_agent is not None:  # a user's declared agent convention, tried first as for tools
        agent = AgentInfo(name=declared_agent[0], run_id=declared_agent[1])
    elif is_agent_span(span):
        agent = AgentInfo(name=_agent_name(span), run_id=_agent_run_id(span))
    keep_attributes = agent is not None or span.parent_span_id is None
    task = _first_text(attrs, ("tracescore.task.id",)) or _resource_task(span)
    return SpanNode(
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        agent=agent,
        explicit_run_id=_first_text(attrs, ("tracescore.run.id",)),
        task_id=task,
        session_id=_first_text(attrs, _SESSION_KEYS),
        service_name=span.resource.service_name,
        attributes_for_select={**span.resource.attributes, **attrs} if keep_attributes else {},
        inner_run_id=_first_text(attrs, ("gcp.vertex.agent.invocation_id",)) if agent is None else None,
        graph_depth=graph_depth,
        graph_name=graph_name,
        setup=is_setup_span(span),
    )

"""What a spec may see of a run: its `scope` applied to the evidence, shared by both profiles."""

from __future__ import annotations

from scoring.checks.registry import Scoped
from scoring.evidence.runs import HANDOFF, Evidence
from scoring.spec.specs import Spec


def _is_leader(agent_path: str | None) -> bool:
    return agent_path is None or "/" not in agent_path


def scoped(spec: Spec, evidence: Evidence) -> tuple[Scoped, int]:
    """The evidence the spec may see, and how many member executions `scope: leader` left out.

    Executions and requests of `ignore_tools` are not seen at all, by any check or gate; nor are
    handoffs (and their requests) to tools that no check of the spec names: handing the conversation
    to another agent is how a framework routes, not a tool the spec has a view on."""
    executions, requests = evidence.executions, evidence.requests
    ignored = set(spec.ignore_tools or [])
    ignored |= {e.tool_name for e in executions if e.kind == HANDOFF} - spec.named_tools
    if ignored:
        executions = tuple(e for e in executions if e.tool_name not in ignored)
        requests = tuple(r for r in requests if r.tool_name not in ignored)
    if spec.scope == "all":
        return Scoped(executions, requests, evidence.definitions, evidence.state, evidence.earlier), 0
    leaders = tuple(e for e in executions if _is_leader(e.agent_path))
    requests = tuple(r for r in requests if _is_leader(r.agent_path))
    earlier = tuple(e for e in evidence.earlier if _is_leader(e.agent_path))
    view = Scoped(leaders, requests, evidence.definitions, evidence.state, earlier)
    return view, len(executions) - len(leaders)

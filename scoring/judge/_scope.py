"""What a spec may see of a run: its `scope` applied to the evidence, shared by both profiles."""

from __future__ import annotations

from scoring.checks.registry import Scoped
from scoring.evidence.runs import Evidence
from scoring.spec.specs import Spec


def _is_leader(agent_path: str | None) -> bool:
    return agent_path is None or "/" not in agent_path


def scoped(spec: Spec, evidence: Evidence) -> tuple[Scoped, int]:
    """The evidence the spec may see, and how many member executions `scope: leader` left out."""
    if spec.scope == "all":
        return Scoped(evidence.executions, evidence.requests, evidence.definitions), 0
    executions = tuple(e for e in evidence.executions if _is_leader(e.agent_path))
    requests = tuple(r for r in evidence.requests if _is_leader(r.agent_path))
    return Scoped(executions, requests, evidence.definitions), len(evidence.executions) - len(executions)

"""Request/execution reconciliation: what happened to each tool call of a run, for every verdict's detail.

The pairing itself is the collector's (`tool_requests.execution_span_id`: by call id, else by name,
arguments and order; docs/conventions.md); scoring reads it and never re-derives it.
"""

from __future__ import annotations

from typing import Any

from scoring.checks.registry import Scoped
from scoring.evidence.runs import Execution, Request

STATES = (
    "clean",
    "errored",
    "paused",
    "requested_never_executed",
    "executed_without_request",
    "from_history",
)


def _state(execution: Execution) -> str:
    if execution.from_history:
        return "from_history"  # replayed from an earlier turn: not this run's call
    if execution.error:
        return "errored"
    if execution.paused:
        return "paused"
    return "clean" if execution.tool_name else "unnamed"


def reference(request: Request) -> dict[str, Any]:
    return {
        "span_id": request.span_id,
        "position": request.position,
        "round": request.round,
        "encoding": request.encoding,
    }


def _matched_by(execution: Execution, request: Request) -> str:
    same_id = execution.call_id is not None and execution.call_id == request.call_id
    return "call_id" if same_id and execution.call_id_source != "request" else "name_arguments_order"


def reconcile(evidence: Scoped) -> dict[str, Any]:
    """Each tool call of the (scoped) run: its state, and the request it answered if any."""
    answered = {key: r for r in evidence.requests if (key := r.execution_key) is not None}
    counts = dict.fromkeys(STATES, 0)
    calls: list[dict[str, Any]] = []
    for execution in evidence.executions:
        state = _state(execution)
        counts[state] = counts.get(state, 0) + 1
        request = answered.get(execution.key)
        if request is None and state != "from_history":
            counts["executed_without_request"] += 1
        calls.append(
            {
                "tool": execution.tool_name,
                "state": state,
                "span_id": execution.span_id,
                "call_id": execution.call_id,
                "request": reference(request) if request else None,
                "matched_by": _matched_by(execution, request) if request else None,
            }
        )
    for request in evidence.requests:
        if not request.executed:
            counts["requested_never_executed"] += 1
            calls.append(
                {
                    "tool": request.tool_name,
                    "state": "requested_never_executed",
                    "span_id": None,
                    "call_id": request.call_id,
                    "request": reference(request),
                    "matched_by": None,
                }
            )
    return {"counts": counts, "requests_captured": bool(evidence.requests), "calls": calls}

"""How tool calls ended, as a later span reports it (`ToolOutcome`), where the tool's own span does not.

OpenInference's AutoGen AgentChat instrumentation (0.1.22, `_wrappers` of `BaseTool.run_json`) sets a
tool span's status OK before AutoGen turns the tool's exception into a `FunctionExecutionResult` with
`is_error=True`, so the tool span never shows the failure. The next LLM span sends the results back to
the model as `llm.input_messages.<m>.function.<k>`, each the JSON text of one result:
`{"name": …, "content": …, "call_id": …, "is_error": true|false}`. Run resolution applies a reported
failure to the execution with that call id (collector/store/_resolve.py).
"""

from __future__ import annotations

import re

from collector.model.domain import Span, ToolOutcome
from collector.recognise._content import load_json_text

AUTOGEN_OPENINFERENCE_SCOPE = "openinference.instrumentation.autogen_agentchat"
_FUNCTION_RESULT = re.compile(r"llm\.input_messages\.\d+\.function\.\d+")


def extract_outcomes(span: Span) -> tuple[ToolOutcome, ...]:
    if span.resource.scope_name != AUTOGEN_OPENINFERENCE_SCOPE:
        return ()
    if span.attributes.get("openinference.span.kind") != "LLM":
        return ()
    outcomes = []
    for key, text in span.attributes.items():
        if not isinstance(text, str) or not _FUNCTION_RESULT.fullmatch(key):
            continue
        result = load_json_text(text)
        if not isinstance(result, dict) or not isinstance(result.get("call_id"), str):
            continue
        name, content = result.get("name"), result.get("content")
        outcomes.append(
            ToolOutcome(
                trace_id=span.trace_id,
                span_id=span.span_id,
                call_id=result["call_id"],
                tool_name=name if isinstance(name, str) else None,
                error=result.get("is_error") is True,
                content=content if isinstance(content, str) else None,
                reported_ns=span.start_ns,
            )
        )
    return tuple(outcomes)

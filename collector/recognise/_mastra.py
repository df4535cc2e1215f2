"""Mastra's tracing exported over OpenTelemetry by `@mastra/otel-exporter`: where the model's requests are.

`@mastra/otel-exporter` 1.4.0 (`src/span-converter.ts`, `src/gen-ai-messages.ts`) writes Mastra's spans
with the GenAI conventions, and its tool calls (`execute_tool {tool}`, `gen_ai.tool.name`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`, `gen_ai.tool.call.id`) are read as `gen_ai`
executions. But its `chat {model}` span's `gen_ai.output.messages` is built from the model's output
`{"text": …}` alone (`convertMastraMessagesToGenAIMessages`), so a turn that called tools shows an empty
text part and no `tool_call`. The calls are kept on the step's own span (`mastra.span.type =
model_step`, `gen_ai.operation.name = agent_step`), whose `mastra.model_step.output` is the step's
`{"text", "toolCalls": [{"toolCallId", "toolName", "args"}]}`: one step is one model turn. (The
`model_generation` span above the steps lists every step's calls again, and is not read.)
"""

from __future__ import annotations

from typing import Any

from collector.recognise._content import load_json_text

SPAN_TYPE = "mastra.span.type"
STEP = "model_step"
STEP_OUTPUT = "mastra.model_step.output"


def step_tool_calls(attrs: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The calls a Mastra model step asked for, in order; None when the span is no Mastra step."""
    if attrs.get(SPAN_TYPE) != STEP:
        return None
    output = load_json_text(attrs.get(STEP_OUTPUT))
    requested = output.get("toolCalls") if isinstance(output, dict) else None
    return [
        {"name": call["toolName"], "arguments": call.get("args"), "id": call.get("toolCallId")}
        for call in (requested if isinstance(requested, list) else [])
        if isinstance(call, dict) and isinstance(call.get("toolName"), str)
    ]

"""MLflow Tracing's default span format (read on mlflow-tracing 3.17.2).

MLflow writes every attribute it sets as JSON text (`mlflow/entities/span.py`, `_SpanAttributesRegistry.set`
writes `dump_span_attribute_value(value)`), so the span type `TOOL` arrives as `mlflow.spanType = "\"TOOL\""`
(`mlflow/tracing/constant.py`, `SpanAttributeKey.SPAN_TYPE`; `mlflow/entities/span.py`, `SpanType`).
A tool span, from `@mlflow.trace(span_type="TOOL")` or an autolog (`mlflow.langchain.autolog()`:
`mlflow/langchain/langchain_tracer.py`, `on_tool_start`), carries:

- `mlflow.spanInputs`: the call's arguments by name (`@mlflow.trace` binds positional arguments to the
  function's parameter names, `mlflow/tracing/utils/__init__.py`, `capture_function_input_args`);
- `mlflow.spanOutputs`: the result as JSON (a LangChain ToolMessage from the autolog: its `content`);
- `tool_call_id`: the model's call id, from the LangChain autolog (the callback's keyword arguments are
  written as attributes, JSON text too);
- a failure: status ERROR with the exception's `Type: message` (or its message alone from the LangChain
  autolog), an `exception` event, and `mlflow.spanLogLevel = 40`.

A `CHAT_MODEL` or `LLM` span's `mlflow.spanOutputs` is the model's answer, an assistant message or an
OpenAI chat completion (the LangChain autolog's form) with `tool_calls` (`_message_shapes`): the requests.
"""

from __future__ import annotations

from typing import Any

from collector.model.domain import Arguments, Span
from collector.recognise._content import load_json_text, parse_arguments, parse_result
from collector.recognise._message_shapes import assistant_tool_calls, json_text_string, tool_message_content

SPAN_TYPE = "mlflow.spanType"
_INPUTS = "mlflow.spanInputs"
_OUTPUTS = "mlflow.spanOutputs"
_CALL_ID = "tool_call_id"
_MODEL_TYPES = frozenset({"CHAT_MODEL", "LLM"})


def _span_type(attrs: dict[str, Any]) -> Any:
    value = attrs.get(SPAN_TYPE)
    return load_json_text(value) if isinstance(value, str) and value.startswith('"') else value


def mlflow_tool(span: Span) -> tuple[str, Arguments, Any, str | None] | None:
    """A TOOL span's name, arguments, result and call id; None for any other span."""
    attrs = span.attributes
    if _span_type(attrs) != "TOOL":
        return None
    result = parse_result(tool_message_content(attrs.get(_OUTPUTS)))
    return span.name, parse_arguments(attrs.get(_INPUTS)), result, json_text_string(attrs.get(_CALL_ID))


def interrupted(convention: str, exception_type: str | None) -> bool:
    """An MLflow tool span stopped by LangGraph's `interrupt()`: the LangChain autolog ends it with status
    ERROR and a `GraphInterrupt` exception event, yet the call is paused for a person, not failed."""
    return convention == "mlflow" and bool(exception_type) and str(exception_type).endswith("GraphInterrupt")


def mlflow_requests(span: Span) -> list[dict[str, Any]] | None:
    """The calls a model span's answer asked for; None when the span is no MLflow model span."""
    if _span_type(span.attributes) not in _MODEL_TYPES:
        return None
    return assistant_tool_calls(span.attributes.get(_OUTPUTS))

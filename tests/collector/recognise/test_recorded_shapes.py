"""Recognition of single spans exactly as a framework recorded them (tests/frameworks/fixtures/), where a
cell as a whole is a known gap and so does not hold the span's reading on its own."""

from __future__ import annotations

from collector.decode.from_json import decode_json
from collector.model.domain import Span
from collector.recognise.span import recognise
from tests.frameworks.matrix import BY_NAME


def _recorded(cell: str, name: str, tool: str) -> Span:
    for line in (BY_NAME[cell].fixture / "otlp.jsonl").read_bytes().splitlines():
        for span in decode_json(line).spans:
            if span.name == name and span.attributes.get("tool.name") == tool:
                return span
    raise AssertionError(f"{cell} recorded no {name} span of {tool}")


def test_the_workflow_context_llama_index_hands_a_tool_is_no_argument() -> None:
    """AgentWorkflow's own `handoff` tool is given the workflow's Context, whose repr the span records."""
    span = _recorded("llamaindex-multiagent-openinference", "FunctionTool.acall", "handoff")
    assert "Context object at 0x" in span.attributes["input.value"]
    execution = recognise(span).execution
    assert execution is not None
    assert execution.arguments.value == {
        "to_agent": "weather_agent",
        "reason": "What is the weather in Paris?",
    }


def test_a_langchain_tool_named_like_an_agent_is_a_tool_and_no_agent() -> None:
    """OpenInference's LangChain instrumentation gives the tool `weather_agent` the kind AGENT."""
    span = _recorded("langgraph-multiagent-openinference", "weather_agent", "weather_agent")
    assert span.attributes["openinference.span.kind"] == "AGENT"
    recognised = recognise(span)
    assert recognised.execution is not None
    assert recognised.execution.tool_name == "weather_agent"
    assert recognised.node.agent is None

"""Run inside the peers' virtualenv (tests/scoring/peers/requirements.txt): scores each case of the JSON
list on stdin with DeepEval's ToolCorrectnessMetric or Ragas' ToolCallAccuracy / ToolCallF1, in process
and without a model (these metrics are computed in code), and prints [{score, success}] as JSON."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
# DeepEval builds its default judge at construction; it is never asked (no available_tools), so a
# placeholder key keeps the constructor from refusing and nothing reaches the network.
os.environ.setdefault("OPENAI_API_KEY", "unused-no-network")


def _deepeval(case: dict[str, Any]) -> dict[str, Any]:
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

    def calls(items: list[dict[str, Any]]) -> list[ToolCall]:
        return [
            ToolCall(name=c["name"], input_parameters=c.get("args"), output=c.get("output")) for c in items
        ]

    options = dict(case["options"])
    options["evaluation_params"] = [ToolCallParams[p] for p in options.get("evaluation_params", [])]
    metric = ToolCorrectnessMetric(async_mode=False, **options)
    test_case = LLMTestCase(
        input="task",
        actual_output="",
        tools_called=calls(case["called"]),
        expected_tools=calls(case["expected"]),
    )
    metric.measure(test_case, _show_indicator=False)
    return {"score": metric.score, "success": metric.success}


def _ragas(case: dict[str, Any]) -> dict[str, Any]:
    from ragas.messages import AIMessage, HumanMessage, ToolCall
    from ragas.metrics.collections import ToolCallAccuracy, ToolCallF1

    metric = ToolCallF1() if case["peer"] == "ragas-f1" else ToolCallAccuracy(**case["options"])
    predicted = [ToolCall(name=c["name"], args=c.get("args", {})) for c in case["called"]]
    reference = [ToolCall(name=c["name"], args=c.get("args", {})) for c in case["expected"]]
    messages = [HumanMessage(content="task"), AIMessage(content="", tool_calls=predicted)]
    result = asyncio.run(metric.ascore(user_input=messages, reference_tool_calls=reference))
    score = float(result.value)
    return {"score": score, "success": score == 1.0}


def main() -> None:
    cases = json.load(sys.stdin)
    out = [_deepeval(case) if case["peer"] == "deepeval" else _ragas(case) for case in cases]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

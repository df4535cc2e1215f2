"""DSPy's `dspy.ReAct` through the shared scenario, with OpenInference's DSPy instrumentation.

The model is DSPy's own `dspy.utils.DummyLM` playing a script: each ReAct step answers the fields
`next_thought`, `next_tool_name` and `next_tool_args` in the chat adapter's `[[ ## field ## ]]` format,
then the extract step (`ChainOfThought`) answers `reasoning` and `answer`. ReAct runs one tool per step,
so the weather task takes two steps (no parallel calls, no call ids: the format has none), and every
trajectory ends with ReAct's own `finish` tool, a real `dspy.Tool` execution. A tool's exception becomes
an observation (`Execution error in book_flight: …`) and the agent goes on. `--call sync` drives
`ReAct.__call__` (tool spans `<tool>.__call__`), `--call async` drives `ReAct.acall` (`<tool>.acall`).
DummyLM calls nothing, and `LITELLM_LOCAL_MODEL_COST_MAP` keeps DSPy's model metadata to its bundled
snapshot: nothing leaves the machine but OTLP to `--endpoint`.

Run inside a virtualenv with tests/frameworks/requirements/dspy-openinference.txt installed:
    python tests/frameworks/drivers/drive_dspy.py --call sync \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/dspy-openinference
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

import dspy
from _harness import (
    SCENARIO,
    Harness,
    arguments,
)
from dspy.utils import DummyLM
from openinference.instrumentation.dspy import DSPyInstrumentor

CALLS = ("sync", "async")


def _script(calls: Sequence[tuple[str, str, dict[str, Any]]], answer: str) -> list[dict[str, Any]]:
    """One ReAct step per call (ReAct has no call ids: the scripted ids are dropped), `finish`, then
    the extract step's answer."""
    steps: list[dict[str, Any]] = [
        {"next_thought": f"I call {name}.", "next_tool_name": name, "next_tool_args": args}
        for _, name, args in calls
    ]
    steps.append({"next_thought": "I have what I need.", "next_tool_name": "finish", "next_tool_args": {}})
    steps.append({"reasoning": "The observations answer the question.", "answer": answer})
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--call", choices=CALLS, default="sync", help="ReAct.__call__ or ReAct.acall")
    args = parser.parse_args(argv)
    # DSPy loads its model metadata lazily, remote first: the bundled snapshot only.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    harness = Harness(
        "dspy-openinference" if args.call == "sync" else "dspy-async-openinference",
        ["dspy", "openinference-instrumentation-dspy"],
        args.endpoint,
        args.record,
    )
    DSPyInstrumentor().instrument(tracer_provider=harness.provider)

    get_weather, book_flight = harness.tools()

    for task, prompt, calls, answer in SCENARIO:
        agent = dspy.ReAct("question -> answer", tools=[get_weather, book_flight], max_iters=5)
        with dspy.context(lm=DummyLM(_script(calls, answer))), harness.invocation(task):
            if args.call == "sync":
                agent(question=prompt)
            else:
                asyncio.run(agent.acall(question=prompt))
    harness.finish(requests=True, internal_tools=["finish"], parallel_calls=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""pydantic-ai's `Agent` through the shared scenario, with pydantic-ai's own OpenTelemetry instrumentation.

pydantic-ai instruments itself (`pydantic_ai.capabilities.Instrumentation` with `InstrumentationSettings`,
the OpenTelemetry GenAI conventions): `invoke_agent` / `chat` / `execute_tool` spans. Its data format is
chosen by `InstrumentationSettings(version=...)` and `include_content`; `--mode` picks one:

- `v5`: the default format (version 5), content captured (pydantic-ai's default).
- `v6`: version 6, the opt-in format whose tool results travel in `role='tool'` messages.
- `v2`: version 2, the deprecated format still accepted (`agent run` / `running tool` spans,
  `tool_arguments` / `tool_response` attributes).
- `nocontent`: version 5 with `include_content=False`: no arguments, results or messages at all.

The model is pydantic-ai's own `FunctionModel` playing a script: both weather calls in one response
(ids `call_paris`, `call_tokyo`; pydantic-ai runs a response's calls concurrently), then the answer.
`book_flight`'s `ValueError` is not a `ModelRetry`, so pydantic-ai ends the run with it (the harness
records what the invocation raised). Nothing leaves the machine but OTLP to `--endpoint`.

Run inside a virtualenv with tests/frameworks/requirements/pydantic-ai.txt installed:
    python tests/frameworks/drivers/drive_pydantic_ai.py --mode v5 \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/pydantic-ai-native
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any, Literal

from _harness import (
    SCENARIO,
    Harness,
    arguments,
)
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

# The instrumentation settings of each mode: (data format version, include_content).
MODES: dict[str, tuple[Literal[2, 5, 6], bool]] = {
    "v5": (5, True),
    "v6": (6, True),
    "v2": (2, True),
    "nocontent": (5, False),
}
# The cell each mode records: the default mode is the plain `pydantic-ai-native`.
CELLS = {"v5": "pydantic-ai-native", **{m: f"pydantic-ai-native-{m}" for m in MODES if m != "v5"}}

Calls = Sequence[tuple[str, str, dict[str, Any]]]


def scripted(calls: Calls, answer: str) -> FunctionModel:
    """A `FunctionModel` that asks for every call in its first response, then answers with text."""
    turns: list[Calls | str] = [calls, answer]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = turns.pop(0)
        if isinstance(turn, str):
            return ModelResponse(parts=[TextPart(turn)])
        return ModelResponse(
            parts=[ToolCallPart(name, args, tool_call_id=call_id) for call_id, name, args in turn]
        )

    return FunctionModel(respond)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--mode", choices=tuple(MODES), default="v5")
    args = parser.parse_args(argv)
    version, include_content = MODES[args.mode]
    harness = Harness(CELLS[args.mode], ["pydantic-ai-slim", "opentelemetry-sdk"], args.endpoint, args.record)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions 2-4 are deprecated, and say so
        settings = InstrumentationSettings(
            tracer_provider=harness.provider, include_content=include_content, version=version
        )
    get_weather, book_flight = harness.tools()
    for task, prompt, calls, answer in SCENARIO:
        agent: Agent[None, str] = Agent(
            scripted(calls, answer),
            name="travel_agent",
            tools=[get_weather, book_flight],
            capabilities=[Instrumentation(settings=settings)],
        )
        with harness.invocation(task):
            agent.run_sync(prompt)
    # The chat spans name each requested call and its id even without content, so requests are seen.
    harness.finish(
        requests=True,
        arguments=include_content,
        error_messages=include_content,
        parallel_calls=True,
        instrumentation_version=version,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

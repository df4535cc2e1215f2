"""Agno's `Agent` through the shared scenario, with OpenInference's instrumentation (`AgnoInstrumentor`).

The model is Agno's own `OpenAIChat` (a class the instrumentor wraps, so the run has LLM spans: the
requests and their call ids), whose OpenAI client is given an `httpx.Client` on an
`httpx.MockTransport`: each `/chat/completions` request is answered by the script's next turn (both
weather calls in one reply, ids `call_paris` and `call_tokyo`, arguments as JSON strings as OpenAI
sends them; then the answer). No socket is opened. Agno catches a tool's exception and hands its text
to the model as the tool's result, so the booking task ends with the model's answer. Agno's usage
telemetry is off (`telemetry=False` and `AGNO_TELEMETRY=false`), so nothing leaves the machine but
OTLP to `--endpoint`.

Run inside a virtualenv with tests/frameworks/requirements/agno-openinference.txt installed:
    python tests/frameworks/drivers/drive_agno.py \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/agno-openinference
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import httpx
from _harness import (
    SCENARIO,
    Harness,
    arguments,
)

Calls = Sequence[tuple[str, str, dict[str, Any]]]


def _completion(calls: Calls | None, answer: str) -> dict[str, Any]:
    """One OpenAI chat completion: the calls when there are any, else the answer."""
    if calls:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for call_id, name, args in calls
            ],
        }
    else:
        message = {"role": "assistant", "content": answer}
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def scripted_client(calls: Calls, answer: str) -> httpx.Client:
    """An HTTP client whose every chat completion is the script's next turn: the calls, then the answer."""
    turns: list[Calls | None] = [calls, None]

    def reply(request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/chat/completions"):
            return httpx.Response(404, json={"error": f"not scripted: {request.url.path}"})
        return httpx.Response(200, json=_completion(turns.pop(0) if turns else None, answer))

    return httpx.Client(transport=httpx.MockTransport(reply))


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(__doc__).parse_args(argv)
    os.environ["AGNO_TELEMETRY"] = "false"  # else Agno posts run telemetry to its API
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from openinference.instrumentation.agno import AgnoInstrumentor

    harness = Harness(
        "agno-openinference",
        ["agno", "openinference-instrumentation-agno", "openai"],
        args.endpoint,
        args.record,
    )
    AgnoInstrumentor().instrument(tracer_provider=harness.provider)
    get_weather, book_flight = harness.tools()
    for task, prompt, calls, answer in SCENARIO:
        model = OpenAIChat(id="gpt-4o", api_key="not-used", http_client=scripted_client(calls, answer))
        agent = Agent(name="Travel Agent", model=model, tools=[get_weather, book_flight], telemetry=False)
        with harness.invocation(task):
            agent.run(prompt)
    harness.finish(requests=True, parallel_calls=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Which spans tracescore reads: the one definition behind `error` verdicts for unread runs (issue #27).

A span is **read** when recognition makes something of it in a convention tracescore reads:

- recognition (`span.recognise`) finds a tool execution on it (an adapter of `conventions`, or any
  reader plugged into recognition);
- or a tool call the model requested (a reader of `requests`);
- or takes it for an agent invocation (`_nodes.is_agent_span`);
- or it is a model call (`is_model_call`): a shape registered below with `model_call`.

Everything but the last is derived from the adapters themselves, so a new adapter makes its spans
read with no list to keep. A span's instrumentation scope plays no part: a hand-instrumented span with
no scope is read when its attributes follow a convention, and a span of a scope tracescore knows is
unread when it holds nothing recognised (an OpenInference CHAIN span).

A run none of whose spans is read gets an `error` verdict naming their scopes, instead of failing
"run has no tool executions" (scoring/evidence/reading.py). To make another model-call shape read
(an SDK whose chat spans carry no requested call when the model answered in text), register it in
one line, beside its adapter:

    model_call(lambda span: span.attributes.get("langfuse.observation.type") == "generation")

A **known gap** is an instrumentation that records the model's requested calls but never the calls, told
apart by its spans (`KnownGap`): a run of it whose model requested calls and that has no execution gets
an `error` verdict naming the gap, since the trace cannot say whether the calls ran. Register one with
`known_gap(KnownGap(...))`, beside the matrix cell that shows it (tests/frameworks/matrix.py `known_gap`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from collector.model.domain import Span
from collector.recognise.span import recognise

ModelCall = Callable[[Span], bool]
MODEL_CALLS: list[ModelCall] = []


def model_call(shape: ModelCall) -> ModelCall:
    """Register a shape of span that records one model call (usable as a decorator)."""
    MODEL_CALLS.append(shape)
    return shape


# OpenTelemetry GenAI (semantic-conventions `gen_ai.operation.name`, the inference operations); pydantic-ai,
# Strands, ADK, AutoGen, CrewAI, Agno and OpenLLMetry's newer spans write it.
_GEN_AI_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
model_call(lambda span: span.attributes.get("gen_ai.operation.name") in _GEN_AI_MODEL_OPERATIONS)
# OpenInference: `openinference.span.kind = LLM`.
model_call(lambda span: span.attributes.get("openinference.span.kind") == "LLM")
# OpenLLMetry before the GenAI operation name: `llm.request.type` (chat, completion).
model_call(lambda span: span.attributes.get("llm.request.type") in ("chat", "completion"))
# The Vercel AI SDK's `ai.generateText.doGenerate` / `ai.streamText.doStream` provider calls.
model_call(lambda span: str(span.attributes.get("ai.operationId", "")).endswith((".doGenerate", ".doStream")))
# Haystack 3's own tracing: one `haystack.agent.step.llm` span per model call.
model_call(lambda span: span.name == "haystack.agent.step.llm")


def is_model_call(span: Span) -> bool:
    return any(shape(span) for shape in MODEL_CALLS)


def is_read(span: Span) -> bool:
    """Whether recognition reads this span: an execution, a requested call, an agent or a model call.
    Asked of what `recognise` hands on, so whatever is plugged into recognition counts."""
    if is_model_call(span):
        return True
    recognised = recognise(span)
    return bool(recognised.executions or recognised.requests or recognised.node.agent is not None)


@dataclass(frozen=True, slots=True)
class KnownGap:
    """Traces of `scope` with a span named `shows` and none named `lacks` record no tool execution,
    though the model's requests are read: `what` says why, in the verdict's reason."""

    scope: str
    shows: str
    lacks: str
    what: str


KNOWN_GAPS: list[KnownGap] = []


def known_gap(gap: KnownGap) -> KnownGap:
    KNOWN_GAPS.append(gap)
    return gap


# openinference-instrumentation-haystack 0.1.46 wraps components; Haystack 3's Agent runs its tools outside
# any (its `ToolInvoker.run` span on Haystack 2 is where tool calls are read): cell `haystack-openinference`.
known_gap(
    KnownGap(
        "openinference.instrumentation.haystack",
        shows="Agent.run",
        lacks="ToolInvoker.run",
        what="OpenInference's Haystack instrumentation emits no span for a tool call on Haystack 3",
    )
)

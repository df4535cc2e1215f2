"""Recognition: what one span says about tool calls, in every convention tracescore reads.

Owns: the convention adapters that turn a span into a `ToolExecution` (OpenTelemetry GenAI,
OpenInference, OpenLLMetry, pydantic-ai/Logfire, Strands, Google ADK, MCP, …; docs/conventions.md),
the readers of the tool calls a model requested (`ToolRequest`s on chat/LLM spans), the reading of
captured arguments and results, and the per-span facts run resolution needs (`SpanNode`).
Takes in: one domain `Span` at a time, from a decoder or re-read from the `spans` table.
Hands on: a `Recognised` record per span, to the decode stage (which ships it from a worker) and to
the store (which tracks and resolves runs from it).

A new convention adapter goes in `conventions` (executions) or `requests` (requested calls), with
the instrumentation source it reads cited beside it and a test on traces recorded from that
instrumentation.

Public:
- `span`: `recognise(span) -> Recognised`, everything recognition reads off one span (its executions:
  one, none, or several where one span runs several calls, `recognise_executions`).
- `conventions`: `recognise_execution`, the adapters in priority order.
- `requests`: `extract_requests`, the request-side readers.
- `outcomes`: `extract_outcomes`, how tool calls ended as a later span reports it.
- `declared`: a user's own conventions, declared in a file (docs/conventions.md, "Your own conventions")
  and tried before the adapters: `files` (`load_conventions`, validated and compiled), `active` (the
  conventions in force in this process), `errors` (`ConventionsError`).
- `reading`: `is_read`, which spans tracescore reads at all (an execution, a requested call, an agent,
  a model call: `model_call` registers another model-call shape), and `KNOWN_GAPS` (`known_gap`), the
  instrumentations that record requests but never the calls; runs of neither get `error` verdicts.

Private: `_content` (JSON arguments and results as emitters send them), `_nodes` (agent, run and task
facts of a span), `_shapes` (frameworks' own shapes of content), `_tool_invoker` (Haystack 2's
ToolInvoker span, one execution per call), `_managed_agents` (smolagents' managed agents, called with no
tool span), `_logfire` (Pydantic Logfire's own shapes: its tool spans and model-call requests),
`_openlit` (OpenLIT's LangChain tool spans), `_python_literal` (argument text written as a Python repr,
read as literal syntax), `_adapted` (what a convention adapter reads off a span).
"""

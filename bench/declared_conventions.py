"""What a user's conventions file adds to recognition, per span: the components workload
(bench/components.py, seeded, decoded once) recognised with no conventions file, with three
conventions that claim none of its spans (the cost every span pays for a file), and with one that
claims its `execute_tool` spans in place of the built-in `gen_ai` adapter (what a claimed span costs
read from a file). Thread CPU time, best of several rounds.

    .venv/bin/python -m bench.declared_conventions [--traces 3000]
"""

from __future__ import annotations

import argparse
import gc

from bench.components import _best
from bench.workload import build
from collector.decode.from_protobuf import decode_protobuf
from collector.recognise.conventions import recognise_execution
from collector.recognise.declared import active
from collector.recognise.declared.files import compile_sources
from collector.recognise.span import recognise
from collector.serve.server import GC_THRESHOLDS

# Three conventions of the kinds a user writes, none of which claims a span of the workload.
UNCLAIMED = """
tools:
  - name: by_name
    match: {span_name: "acme.tool"}
    tool_name: {attribute: acme.tool}
  - name: by_attribute
    match: {attributes: {acme.kind: tool, acme.version: 2}}
    tool_name: {attribute: acme.tool}
  - name: by_pattern
    match: {span_name_pattern: "tool:.+", scope: acme.agent}
    tool_name: {span_name: true, strip_prefix: "tool:"}
"""
# The workload's tool spans read by a declared convention (it is tried first, so it claims them).
CLAIMING = """
tools:
  - name: declared_gen_ai
    match: {attributes: {gen_ai.operation.name: execute_tool}}
    tool_name: {attribute: gen_ai.tool.name}
    arguments: {attribute: gen_ai.tool.call.arguments}
    result: {attribute: gen_ai.tool.call.result}
    call_id: {attribute: gen_ai.tool.call.id}
"""


def measure(traces: int, rounds: int = 7) -> dict[str, float]:
    """µs per span: recognition as today, then the work a conventions file adds alone (timed apart:
    differences of whole-recognition times drown in the noise of a shared machine)."""
    gc.set_threshold(*GC_THRESHOLDS)
    workload = build(traces, seed=7)
    spans = [s for body in workload.requests for s in decode_protobuf(body).spans]
    tool_spans = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert len(tool_spans) == workload.tool_spans
    figures: dict[str, float] = {}
    active.install(None)
    seconds, _ = _best(rounds, lambda: [recognise(s) for s in spans])
    figures["recognise, no conventions file (every span)"] = seconds * 1e6 / len(spans)
    seconds, _ = _best(rounds, lambda: [recognise_execution(s) for s in tool_spans])
    figures["built-in gen_ai adapter, a tool span"] = seconds * 1e6 / len(tool_spans)

    unclaimed = compile_sources([("bench", UNCLAIMED)])
    seconds, found = _best(rounds, lambda: [unclaimed.read(s) for s in spans])
    assert not any(found)
    figures["added by 3 conventions claiming nothing (every span)"] = seconds * 1e6 / len(spans)

    claiming = compile_sources([("bench", CLAIMING)])
    active.install(claiming)
    try:
        seconds, executions = _best(rounds, lambda: [recognise_execution(s) for s in tool_spans])
    finally:
        active.install(None)
    assert all(e is not None and e.convention == "declared_gen_ai" for e in executions)
    figures["declared convention claiming it, a tool span"] = seconds * 1e6 / len(tool_spans)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=3000)
    args = parser.parse_args()
    figures = measure(args.traces)
    width = max(map(len, figures))
    for label, micros in figures.items():
        print(f"{label:<{width}}  {micros:6.2f} µs/span")


if __name__ == "__main__":
    main()

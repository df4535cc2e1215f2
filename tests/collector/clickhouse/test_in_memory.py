"""A batch judged in memory (collector/clickhouse/in_memory.py) where the scratch store's way would give
something else: spans sent twice, and a run over two traces of the batch (every convention's traces,
both ways: tests/collector/clickhouse/test_parity.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

from collector.clickhouse.in_memory import judge_in_memory
from collector.clickhouse.scorer import judge_batch, judge_through_store
from collector.model.domain import Span
from scoring import Spec
from scoring.batch.score import Scored
from tests._spans import START_NS, domain_span

SPEC = Spec.model_validate(
    {"name": "uses-lookup", "expected_tools": ["lookup"], "arguments": {"lookup": {"sku": "7"}}}
)


def _run(trace_id: str, *, run_id: str | None = None, sku: str = "7", error: bool = False) -> list[Span]:
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
    if run_id is not None:
        agent["tracescore.run.id"] = run_id
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.arguments": f'{{"sku": "{sku}"}}',
    }
    return [
        domain_span(trace_id, "a" * 16, name="invoke_agent shop", attributes=agent, end_ns=START_NS + 10),
        domain_span(
            trace_id,
            "b" * 16,
            "a" * 16,
            name="execute_tool lookup",
            attributes=tool,
            start_ns=START_NS + 1,
            end_ns=START_NS + 2,
            status_code=2 if error else 0,
        ),
    ]


def _dicts(scored: list[Scored]) -> list[dict[str, Any]]:
    return [v.to_dict() for v in scored]


def test_a_span_sent_twice_counts_as_first_received_as_the_writer_keeps_it() -> None:
    clean = _run("1" * 32)
    failed_again = dataclasses.replace(clean[1], status_code=2)
    spans = [*clean, failed_again]
    judged = judge_in_memory(spans, [SPEC])
    assert judged is not None
    assert [v.label for v in judged.scored] == ["pass"]
    assert _dicts(judged.scored) == _dicts(judge_through_store(spans, [SPEC], records=False)[0])


def test_a_run_over_two_traces_of_the_batch_is_judged_whole_through_the_store() -> None:
    # The first trace's call failed, the second's is clean: judged whole (version 2), the run passes; each
    # trace alone would give a verdict of its own, one of them failing.
    spans = [*_run("1" * 32, run_id="r1", error=True), *_run("2" * 32, run_id="r1")]
    assert judge_in_memory(spans, [SPEC]) is None
    scored, _ = judge_batch(spans, [SPEC], records=False)
    assert [(v.run_id, v.label, v.to_dict()["run_version"]) for v in scored] == [("r1", "pass", 2)]

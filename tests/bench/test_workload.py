"""The bench's workload is what `make bench` says it measures: every tool span of it is read as a tool
execution and every call as requested by a model, so recognition's figures are those of real work.
(Recognition in SQL held its reading of this workload to Python's until issue 32's answer removed it;
this keeps the Python reading itself checked.)"""

from __future__ import annotations

from collections import Counter

from bench.workload import build
from collector.decode.from_protobuf import decode_protobuf
from collector.recognise.conventions import recognise_execution
from collector.recognise.requests import extract_requests


def test_every_tool_span_is_an_execution_and_every_call_was_requested() -> None:
    workload = build(60, seed=7)
    spans = [span for body in workload.requests for span in decode_protobuf(body).spans]
    executions = [e for span in spans if (e := recognise_execution(span)) is not None]
    requests = [r for span in spans for r in extract_requests(span)]
    assert workload.tool_spans > 0
    assert Counter(e.convention for e in executions) == {"gen_ai": workload.tool_spans}
    assert Counter(r.encoding for r in requests) == {"gen_ai": workload.tool_spans}
    assert {(e.trace_id, e.call_id) for e in executions} == {(r.trace_id, r.call_id) for r in requests}

"""The public Python API (docs/testing.md): SDK spans or an OTLP export file in, verdicts out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector.decode.decoded import UndecodableRequest
from collector.testing import Recording, SpanCapture, score_file, score_spans, spans_from_sdk
from scoring import SpecError
from tests.collector.testing._agent import SPEC_YAML, weather_agent

FIXTURES = Path(__file__).resolve().parents[2] / "frameworks" / "fixtures"


def _recorded(*runs: list[tuple[str, dict[str, object]]]) -> InMemorySpanExporter:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-service"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for calls in runs:
        weather_agent(provider.get_tracer("agent"), calls)
    return memory


def test_spans_are_judged_in_runs_with_verdicts_as_objects_and_as_json() -> None:
    memory = _recorded([("get_weather", {"city": "Paris"})], [("get_weather", {"city": "Rome"})])
    scoring = score_spans(memory.get_finished_spans(), SPEC_YAML)
    assert [v.label for v in scoring.verdicts] == ["pass", "fail"]
    assert not scoring.passed
    assert scoring.failed[0].reason == (
        'no clean get_weather execution matches arguments {"city": "Paris"} (1 clean call(s))'
    )
    listed = json.loads(scoring.json())
    assert [v["run_id"] for v in listed] == [v.run_id for v in scoring.verdicts]
    assert listed == scoring.to_list()
    explained = scoring.explain()
    assert "check  arguments  get_weather" in explained
    assert '{"city": "Rome"}' in explained


def test_a_spec_is_a_path_yaml_text_a_dict_or_a_list(tmp_path: Path) -> None:
    memory = _recorded([("get_weather", {"city": "Paris"})])
    spec_file = tmp_path / "weather.yaml"
    spec_file.write_text(SPEC_YAML)
    as_dict = {
        "name": "weather",
        "expected_tools": ["get_weather"],
        "arguments": {"get_weather": {"city": "Paris"}},
    }
    with Recording(memory.get_finished_spans()) as recording:
        for spec in (spec_file, str(spec_file), SPEC_YAML, as_dict, [as_dict]):
            (verdict,) = recording.score(spec).verdicts
            assert verdict.label == "pass", spec
        with pytest.raises(SpecError, match="expected_tool: unknown key"):
            recording.score({"name": "typo", "expected_tool": ["get_weather"]})


def test_runs_are_grouped_as_serve_groups_them() -> None:
    memory = _recorded([("get_weather", {"city": "Paris"})], [("get_weather", {"city": "Oslo"})])
    with Recording(memory.get_finished_spans()) as recording:
        runs = recording.runs()
        assert [(r.task_id, r.agent_name, r.service_name) for r in runs] == [
            ("forecast", "weather", "weather-service")
        ] * 2
        ((executions,),) = recording.connection.execute("SELECT count(*) FROM executions").fetchall()
        assert executions == 2


def test_an_otlp_export_file_is_judged_in_protobuf(tmp_path: Path) -> None:
    memory = _recorded([("get_weather", {"city": "Paris"})], [("get_weather", {"city": "Rome"})])
    binary = tmp_path / "export.pb"
    binary.write_bytes(encode_spans(memory.get_finished_spans()).SerializeToString())
    expected = score_spans(memory.get_finished_spans(), SPEC_YAML).json()
    assert '"label": "fail"' in expected
    assert score_file(binary, SPEC_YAML).json() == expected


ANY_RUN = {"name": "any-run", "forbidden_tools": ["no_such_tool"]}


def test_a_recorded_framework_export_is_judged_from_json_lines_and_from_one_json_request(
    tmp_path: Path,
) -> None:
    # pydantic-ai's spans as its instrumentation really exported them (tests/frameworks/fixtures).
    lines = (FIXTURES / "pydantic-ai-native" / "otlp.jsonl").read_text().splitlines()
    with Recording.from_file(FIXTURES / "pydantic-ai-native" / "otlp.jsonl") as recording:
        runs = recording.runs()
        assert runs
        scoring = recording.score(ANY_RUN)
        assert [v.run_id for v in scoring.verdicts] == [r.run_id for r in runs]
    first_line = tmp_path / "first.jsonl"
    first_line.write_text(lines[0] + "\n")
    pretty = tmp_path / "first.json"
    pretty.write_text(json.dumps(json.loads(lines[0]), indent=2))
    assert score_file(pretty, ANY_RUN).json() == score_file(first_line, ANY_RUN).json()


def test_a_file_that_is_not_otlp_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "export.jsonl"
    bad.write_text('{"resourceSpans": []}\n{"resourceSpans": 7}\n')  # the second is no request
    with pytest.raises(UndecodableRequest, match="line 2"):
        score_file(bad, SPEC_YAML)


def test_span_capture_keeps_a_providers_spans_and_the_sdk_encoding_is_otlps() -> None:
    provider = TracerProvider()
    capture = SpanCapture.attach(provider)
    weather_agent(provider.get_tracer("agent"), [("get_weather", {"city": "Paris"})], fail="get_weather")
    spans = spans_from_sdk(capture.spans)
    assert sorted(s.name for s in spans) == ["execute_tool get_weather", "invoke_agent weather"]
    scoring = score_spans(capture.spans, SPEC_YAML)
    assert scoring.verdicts[0].label == "fail"  # its one call errored: no clean execution
    capture.shutdown()
    weather_agent(provider.get_tracer("agent"), [("get_weather", {"city": "Paris"})])
    assert capture.spans == []

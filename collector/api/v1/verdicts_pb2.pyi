from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Check(_message.Message):
    __slots__ = ("kind", "target", "satisfied", "detail", "expected_json", "observed_json")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    SATISFIED_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_JSON_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_JSON_FIELD_NUMBER: _ClassVar[int]
    kind: str
    target: str
    satisfied: bool
    detail: str
    expected_json: str
    observed_json: str
    def __init__(self, kind: _Optional[str] = ..., target: _Optional[str] = ..., satisfied: _Optional[bool] = ..., detail: _Optional[str] = ..., expected_json: _Optional[str] = ..., observed_json: _Optional[str] = ...) -> None: ...

class Verdict(_message.Message):
    __slots__ = ("run_id", "trace_id", "task", "spec", "spec_fingerprint", "profile", "passed", "value", "label", "reason", "run_version", "checks", "missing_tools", "additional_tools", "json", "scored_at_unix_nano")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SPEC_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RUN_VERSION_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    MISSING_TOOLS_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_TOOLS_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    SCORED_AT_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    trace_id: str
    task: str
    spec: str
    spec_fingerprint: str
    profile: str
    passed: bool
    value: float
    label: str
    reason: str
    run_version: int
    checks: _containers.RepeatedCompositeFieldContainer[Check]
    missing_tools: _containers.RepeatedScalarFieldContainer[str]
    additional_tools: _containers.RepeatedScalarFieldContainer[str]
    json: str
    scored_at_unix_nano: int
    def __init__(self, run_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., task: _Optional[str] = ..., spec: _Optional[str] = ..., spec_fingerprint: _Optional[str] = ..., profile: _Optional[str] = ..., passed: _Optional[bool] = ..., value: _Optional[float] = ..., label: _Optional[str] = ..., reason: _Optional[str] = ..., run_version: _Optional[int] = ..., checks: _Optional[_Iterable[_Union[Check, _Mapping]]] = ..., missing_tools: _Optional[_Iterable[str]] = ..., additional_tools: _Optional[_Iterable[str]] = ..., json: _Optional[str] = ..., scored_at_unix_nano: _Optional[int] = ...) -> None: ...

class GetRunVerdictsRequest(_message.Message):
    __slots__ = ("run_id", "spec", "all_versions")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    ALL_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    spec: str
    all_versions: bool
    def __init__(self, run_id: _Optional[str] = ..., spec: _Optional[str] = ..., all_versions: _Optional[bool] = ...) -> None: ...

class GetRunVerdictsResponse(_message.Message):
    __slots__ = ("verdicts",)
    VERDICTS_FIELD_NUMBER: _ClassVar[int]
    verdicts: _containers.RepeatedCompositeFieldContainer[Verdict]
    def __init__(self, verdicts: _Optional[_Iterable[_Union[Verdict, _Mapping]]] = ...) -> None: ...

class ListTaskResultsRequest(_message.Message):
    __slots__ = ("task", "spec", "k")
    TASK_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    task: str
    spec: str
    k: int
    def __init__(self, task: _Optional[str] = ..., spec: _Optional[str] = ..., k: _Optional[int] = ...) -> None: ...

class TaskResult(_message.Message):
    __slots__ = ("task", "spec", "spec_fingerprint", "n_runs", "n_scored", "n_passed", "n_errors", "pass_rate", "mean_value", "k", "pass_at_k", "pass_hat_k", "in_learning_zone", "latency_passed", "execution_latency")
    TASK_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SPEC_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    N_RUNS_FIELD_NUMBER: _ClassVar[int]
    N_SCORED_FIELD_NUMBER: _ClassVar[int]
    N_PASSED_FIELD_NUMBER: _ClassVar[int]
    N_ERRORS_FIELD_NUMBER: _ClassVar[int]
    PASS_RATE_FIELD_NUMBER: _ClassVar[int]
    MEAN_VALUE_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    PASS_AT_K_FIELD_NUMBER: _ClassVar[int]
    PASS_HAT_K_FIELD_NUMBER: _ClassVar[int]
    IN_LEARNING_ZONE_FIELD_NUMBER: _ClassVar[int]
    LATENCY_PASSED_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_LATENCY_FIELD_NUMBER: _ClassVar[int]
    task: str
    spec: str
    spec_fingerprint: str
    n_runs: int
    n_scored: int
    n_passed: int
    n_errors: int
    pass_rate: float
    mean_value: float
    k: int
    pass_at_k: float
    pass_hat_k: float
    in_learning_zone: bool
    latency_passed: bool
    execution_latency: ExecutionLatency
    def __init__(self, task: _Optional[str] = ..., spec: _Optional[str] = ..., spec_fingerprint: _Optional[str] = ..., n_runs: _Optional[int] = ..., n_scored: _Optional[int] = ..., n_passed: _Optional[int] = ..., n_errors: _Optional[int] = ..., pass_rate: _Optional[float] = ..., mean_value: _Optional[float] = ..., k: _Optional[int] = ..., pass_at_k: _Optional[float] = ..., pass_hat_k: _Optional[float] = ..., in_learning_zone: _Optional[bool] = ..., latency_passed: _Optional[bool] = ..., execution_latency: _Optional[_Union[ExecutionLatency, _Mapping]] = ...) -> None: ...

class ExecutionLatency(_message.Message):
    __slots__ = ("n", "p50_ms", "p95_ms", "p99_ms")
    N_FIELD_NUMBER: _ClassVar[int]
    P50_MS_FIELD_NUMBER: _ClassVar[int]
    P95_MS_FIELD_NUMBER: _ClassVar[int]
    P99_MS_FIELD_NUMBER: _ClassVar[int]
    n: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    def __init__(self, n: _Optional[int] = ..., p50_ms: _Optional[float] = ..., p95_ms: _Optional[float] = ..., p99_ms: _Optional[float] = ...) -> None: ...

class ListTaskResultsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[TaskResult]
    def __init__(self, results: _Optional[_Iterable[_Union[TaskResult, _Mapping]]] = ...) -> None: ...

class WatchVerdictsRequest(_message.Message):
    __slots__ = ("spec", "run_id", "include_existing")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_EXISTING_FIELD_NUMBER: _ClassVar[int]
    spec: str
    run_id: str
    include_existing: bool
    def __init__(self, spec: _Optional[str] = ..., run_id: _Optional[str] = ..., include_existing: _Optional[bool] = ...) -> None: ...

"""The pytest plugin: installing tracescore is enough (the `pytest11` entry point loads this module).

- The `tracescore` fixture captures every span the test's code ends on the global tracer provider
  (an SDK `TracerProvider` is installed as global when none is set) and on any provider the test
  names with `tracescore.capture(provider)`, and judges them as `serve` would (collector/testing/
  recording.py): `runs()`, `verdicts(spec)`, `assert_run(spec)`.
- `@pytest.mark.tracescore_rollouts(k=5, pass_rate=0.8)` runs the test k times (the spans captured
  afresh for each attempt) and asserts the pass rate, pass@k or pass^k over them (docs/testing.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from collector.testing.capture import SpanCapture
from collector.testing.recording import Recording, Scoring, SpecLike
from scoring import Run, SpecError
from scoring.report.aggregate import pass_at_k, pass_hat_k

_MARKER = "tracescore_rollouts"
# The global provider gets one capture for the whole process: a provider cannot drop a processor, and
# one per test would pile up on it.
_GLOBAL: list[SpanCapture] = []


class TraceScore:
    """What the `tracescore` fixture hands a test."""

    def __init__(self) -> None:
        self._captures: list[SpanCapture] = []
        self._recording: Recording | None = None
        self._recorded = -1

    def _start(self) -> None:
        if not _GLOBAL:
            _GLOBAL.append(SpanCapture.attach())
        _GLOBAL[0].clear()
        self._captures.append(_GLOBAL[0])

    def capture(self, provider: TracerProvider) -> None:
        """Capture the spans of this provider too (one the code under test was given explicitly)."""
        if any(c.provider is provider for c in self._captures):
            return
        self._captures.append(SpanCapture.attach(provider))

    @property
    def spans(self) -> list[ReadableSpan]:
        """Every span ended since the test (or the rollout's attempt) began, in the order they ended."""
        return [span for capture in self._captures for span in capture.spans]

    def clear(self) -> None:
        """Forget the spans captured so far (a rollout attempt starts with none)."""
        for capture in self._captures:
            capture.clear()
        self._drop_recording()

    def recording(self) -> Recording:
        """The captured spans in the in-memory store, runs completed (made again when spans arrived).
        Fails the test while a span the test started is still open: `serve` would not judge its run
        yet either, and judging it now could miss what it does before it ends."""
        __tracebackhide__ = True
        still_open = [name for capture in self._captures for name in capture.open_spans]
        if still_open:
            pytest.fail(
                f"tracescore: {len(still_open)} span(s) started in this test have not ended "
                f"({', '.join(sorted(set(still_open))[:5])}): assert once the agent's run is over",
                pytrace=False,
            )
        spans = self.spans
        if self._recording is None or self._recorded != len(spans):
            self._drop_recording()
            self._recording = Recording(spans)
            self._recorded = len(spans)
        return self._recording

    def runs(self) -> list[Run]:
        """The complete runs of the captured spans, grouped as `serve` groups them."""
        return self.recording().runs()

    def verdicts(self, spec: SpecLike, *, task: str | None = None, run: str | None = None) -> Scoring:
        """The verdicts of `spec` (a path, YAML text, a dict, or a list of them) over the runs; a bad
        spec fails the test with the loader's one line, no traceback."""
        __tracebackhide__ = True
        try:
            return self.recording().score(spec, task=task, run=run)
        except SpecError as exc:
            problem = str(exc)
        # Outside the `except`: the loader's one line alone, without the pydantic error it explains.
        pytest.fail(f"tracescore: {problem}", pytrace=False)

    def assert_run(self, spec: SpecLike, *, task: str | None = None, run: str | None = None) -> Scoring:
        """Fails the test unless `spec` judged at least one run and every verdict passed; the failure
        names each unmet check and lists the run's executions."""
        __tracebackhide__ = True
        scoring = self.verdicts(spec, task=task, run=run)
        if not scoring.verdicts:
            runs = self.runs()
            raise AssertionError(
                f"tracescore: no complete run matched the spec ({len(runs)} complete run(s) captured from "
                f"{len(self.spans)} span(s); check the spec's select, and that the code under test "
                "traces through the provider captured)"
            )
        if not scoring.passed:
            first = scoring.failed[0]
            raise AssertionError(
                f"tracescore: {len(scoring.failed)} of {len(scoring.verdicts)} verdict(s) did not pass; "
                f"spec {first.spec!r}: {first.reason}\n{scoring.explain()}"
            )
        return scoring

    def _drop_recording(self) -> None:
        if self._recording is not None:
            self._recording.close()
        self._recording = None
        self._recorded = -1

    def _finish(self) -> None:
        self._drop_recording()
        for capture in self._captures:
            if capture is not (_GLOBAL[0] if _GLOBAL else None):
                capture.shutdown()
            else:
                capture.clear()


@pytest.fixture
def tracescore() -> Iterator[TraceScore]:
    """Captures the spans the test emits; judges them as `tracescore serve` would."""
    fixture = TraceScore()
    fixture._start()
    try:
        yield fixture
    finally:
        fixture._finish()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(k=5, pass_rate=None, pass_at_k=None, pass_hat_k=None, n=None): run the test n times "
        "(k unless given) and assert the share of passing attempts, pass@k or pass^k (tracescore)",
    )


@dataclass(frozen=True, slots=True)
class Rollouts:
    k: int
    n: int
    pass_rate: float | None
    pass_at_k: float | None
    pass_hat_k: float | None

    @classmethod
    def of(cls, marker: pytest.Mark) -> Rollouts:
        known = {"k", "n", "pass_rate", "pass_at_k", "pass_hat_k"}
        unknown = set(marker.kwargs) - known
        if marker.args or unknown:
            pytest.fail(
                f"{_MARKER} takes keywords only ({', '.join(sorted(known))}); got "
                f"{list(marker.args) + sorted(unknown)}",
                pytrace=False,
            )
        k = int(marker.kwargs.get("k", 5))
        n = int(marker.kwargs.get("n") or k)
        figures = [marker.kwargs.get(f) for f in ("pass_rate", "pass_at_k", "pass_hat_k")]
        if k < 1 or n < k or all(f is None for f in figures):
            pytest.fail(
                f"{_MARKER}: needs k >= 1, n >= k and at least one of pass_rate, pass_at_k, pass_hat_k",
                pytrace=False,
            )
        rate, at_k, hat_k = (None if f is None else float(f) for f in figures)
        return cls(k, n, rate, at_k, hat_k)

    def shortfalls(self, passed: int) -> list[str]:
        """Each figure asked for that the attempts fell short of, said with its value."""
        measured = {
            "pass rate": (passed / self.n, self.pass_rate),
            f"pass@{self.k}": (pass_at_k(self.n, passed, self.k), self.pass_at_k),
            f"pass^{self.k}": (pass_hat_k(self.n, passed, self.k), self.pass_hat_k),
        }
        return [
            f"{name} {value:.2f} is below {wanted:.2f}"
            for name, (value, wanted) in measured.items()
            if wanted is not None and value is not None and value < wanted
        ]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    marker = pyfuncitem.get_closest_marker(_MARKER)
    if marker is None:
        return None
    rollouts = Rollouts.of(marker)
    function = pyfuncitem.obj
    if inspect.iscoroutinefunction(function):
        pytest.fail(f"{_MARKER}: {pyfuncitem.nodeid} is async; run the agent synchronously", pytrace=False)
    names = pyfuncitem._fixtureinfo.argnames
    arguments: dict[str, Any] = {name: pyfuncitem.funcargs[name] for name in names}
    fixture = arguments.get("tracescore")
    failures: list[tuple[int, BaseException]] = []
    for attempt in range(rollouts.n):
        if isinstance(fixture, TraceScore):
            fixture.clear()
        try:
            function(**arguments)
        except (Exception, pytest.fail.Exception) as exc:  # a failed attempt, counted; a skip ends them all
            failures.append((attempt + 1, exc))
    passed = rollouts.n - len(failures)
    shortfalls = rollouts.shortfalls(passed)
    if shortfalls:
        first_attempt, first = failures[0]
        raise AssertionError(
            f"{_MARKER}: {passed} of {rollouts.n} attempts passed: {'; '.join(shortfalls)}\n"
            f"attempt {first_attempt} failed with: {first}"
        )
    return True

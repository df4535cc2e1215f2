"""Issue 17's performance targets, judged from what `make bench` measured: one row per figure with the
target, the measured value as the target states it, and whether it is met (None: not measured).

A rate-bound figure (verdict lag at 5,000 tool spans/s, ack latency at half rate) counts as met only if
the server took at least `ACHIEVED_SHARE` of the offered rate: latency at a rate the server did not
sustain is not the target's figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

ACHIEVED_SHARE = 0.95
INGEST_SHARE_OF_LIMIT = 0.5
INGEST_TIMES_PHOENIX = 100
LONGEST_COMMIT_MS = 50
LAG_OVER_GRACE_MS = 250
ACK_P99_MS = 50
PEAK_RSS_MB = 300
BATCH_EXECUTIONS_PER_S = 200_000
SPECS_RATIO = 2.0


@dataclass(frozen=True)
class Sustained:
    """A paced run: what was offered and taken (per second), for how long, and its p99 (None: the
    percentile fell among the `missing` values that never came)."""

    offered_per_s: float
    achieved_per_s: float
    seconds: float
    p99_ms: float | None
    missing: int = 0
    checkpoints: float = float("nan")

    @property
    def sustained(self) -> bool:
        return self.achieved_per_s >= ACHIEVED_SHARE * self.offered_per_s


@dataclass(frozen=True)
class Measured:
    """What a run measured; None (or empty) for what it did not (a step left out, Phoenix not
    installed, no such metric on the server)."""

    limit_spans_per_s: float | None = None
    ingest_spans_per_s: float | None = None
    phoenix_stored_spans_per_s: float | None = None
    longest_commit_during_checkpoint_ms: float | None = None
    grace_s: float = 0.5
    verdict_lag: Sustained | None = None  # per second: tool spans
    ack_half_rate: Sustained | None = None  # per second: spans
    peak_rss_mb: float | None = None
    batch_executions_per_s: float | None = None
    specs: int = 1000
    specs_ratios: dict[str, float] = field(default_factory=dict)  # path -> time(specs) / time(1 spec)


@dataclass(frozen=True)
class Row:
    figure: str
    target: str
    measured: str
    met: bool | None


def _all(*conditions: bool | None) -> bool | None:
    """False if any condition fails, else None if any is unknown, else True."""
    if any(c is False for c in conditions):
        return False
    return None if any(c is None for c in conditions) else True


NOT_MEASURED = "not measured"


def _ingest(m: Measured) -> Row:
    figure = "durable ingest over gRPC"
    target = f"≥ {INGEST_SHARE_OF_LIMIT:.0%} of the in-process limit, ≥ {INGEST_TIMES_PHOENIX}x Arize Phoenix"
    if m.ingest_spans_per_s is None or m.limit_spans_per_s is None:
        return Row(figure, target, NOT_MEASURED, None)
    share = m.ingest_spans_per_s / m.limit_spans_per_s
    text = f"{m.ingest_spans_per_s:,.0f} spans/s = {share:.0%} of the limit ({m.limit_spans_per_s:,.0f})"
    times: float | None = None
    if m.phoenix_stored_spans_per_s:
        times = m.ingest_spans_per_s / m.phoenix_stored_spans_per_s
        text += f", {times:,.0f}x Phoenix ({m.phoenix_stored_spans_per_s:,.0f} stored spans/s)"
    else:
        text += "; Phoenix not measured (not installed)"
    return Row(
        figure,
        target,
        text,
        _all(share >= INGEST_SHARE_OF_LIMIT, None if times is None else times >= INGEST_TIMES_PHOENIX),
    )


def _longest_commit(m: Measured) -> Row:
    value = m.longest_commit_during_checkpoint_ms
    figure, target = "longest commit during a checkpoint, sustained load", f"< {LONGEST_COMMIT_MS} ms"
    if value is None:
        ran = m.verdict_lag is not None or m.ack_half_rate is not None
        return Row(figure, target, "not measured: server has no metric" if ran else NOT_MEASURED, None)
    return Row(
        figure,
        target,
        f"{value:,.0f} ms (the server's metric, over the sustained runs)",
        value < LONGEST_COMMIT_MS,
    )


def _p99(run: Sustained, what: str) -> str:
    if run.p99_ms is None:
        return f"p99 unknown: {run.missing:,} {what} never came"
    return f"p99 {run.p99_ms:,.0f} ms"


def _rate(run: Sustained, unit: str) -> str:
    text = f"{run.achieved_per_s:,.0f} of {run.offered_per_s:,.0f} {unit}/s offered, {run.seconds:,.0f} s"
    return text if run.sustained else f"{text} (under {ACHIEVED_SHARE:.0%} of the offered rate)"


def _verdict_lag(m: Measured) -> Row:
    run, limit_ms = m.verdict_lag, m.grace_s * 1000 + LAG_OVER_GRACE_MS
    target = f"≤ grace + {LAG_OVER_GRACE_MS} ms (grace {m.grace_s:g} s: {limit_ms:,.0f} ms)"
    if run is None:
        return Row("verdict lag p99, 5,000 tool spans/s sustained 5 min", target, NOT_MEASURED, None)
    return Row(
        f"verdict lag p99, {run.offered_per_s:,.0f} tool spans/s sustained {_duration(run.seconds)}",
        target,
        f"{_p99(run, 'verdicts')}{'' if run.p99_ms is None else ' from sending'}, "
        f"at {_rate(run, 'tool spans')}",
        run.sustained and run.p99_ms is not None and run.p99_ms <= limit_ms,
    )


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def _ack(m: Measured) -> Row:
    run, target = m.ack_half_rate, f"< {ACK_P99_MS} ms"
    if run is None:
        return Row("ack p99 at half rate, sustained 5 min, checkpoints included", target, NOT_MEASURED, None)
    return Row(
        f"ack p99 at half rate, sustained {_duration(run.seconds)}, checkpoints included",
        target,
        f"{_p99(run, 'acknowledgements')} at {_rate(run, 'spans')}, checkpoints: {run.checkpoints:.0f}",
        run.sustained and run.p99_ms is not None and run.p99_ms < ACK_P99_MS,
    )


def _specs(m: Measured) -> Row:
    figure, target = f"{m.specs:,} specs vs 1 spec, same runs", f"≤ {SPECS_RATIO:g}x"
    if not m.specs_ratios:
        return Row(figure, target, NOT_MEASURED, None)
    worst = max(m.specs_ratios, key=lambda path: m.specs_ratios[path])
    others = "; ".join(f"{r:.2f}x {p}" for p, r in m.specs_ratios.items() if p != worst)
    text = f"{m.specs_ratios[worst]:.2f}x {worst} (the worst){'; ' + others if others else ''}"
    return Row(figure, target, text, all(r <= SPECS_RATIO for r in m.specs_ratios.values()))


def _threshold(figure: str, target: str, value: float | None, text: str, met: Callable[[float], bool]) -> Row:
    if value is None:
        return Row(figure, target, NOT_MEASURED, None)
    return Row(figure, target, text.format(value), met(value))


def rows(m: Measured) -> list[Row]:
    return [
        _ingest(m),
        _longest_commit(m),
        _verdict_lag(m),
        _ack(m),
        _threshold(
            "peak RSS, default settings, full rate",
            f"< {PEAK_RSS_MB} MB",
            m.peak_rss_mb,
            "{:,.0f} MB (server + decode workers)",
            lambda mb: mb < PEAK_RSS_MB,
        ),
        _threshold(
            "batch scoring",
            f"≥ {BATCH_EXECUTIONS_PER_S // 1000} k executions/s",
            m.batch_executions_per_s,
            "{:,.0f} executions/s (set-based, scored and stored)",
            lambda rate: rate >= BATCH_EXECUTIONS_PER_S,
        ),
        _specs(m),
    ]


def met_text(met: bool | None, quick: bool) -> str:
    text = {True: "yes", False: "no", None: "not measured"}[met]
    return f"{text} (quick run)" if quick and met is not None else text


def render(table: list[Row], quick: bool) -> str:
    """The summary as a Markdown table (bench/README.md's "Targets" takes it as it is)."""
    lines = ["| figure | target | measured | met? |", "|---|---|---|---|"]
    lines += [f"| {r.figure} | {r.target} | {r.measured} | {met_text(r.met, quick)} |" for r in table]
    return "\n".join(lines)


def as_json(table: list[Row], measured: Measured, quick: bool) -> dict[str, object]:
    return {"quick": quick, "targets": [asdict(r) for r in table], "measured": asdict(measured)}

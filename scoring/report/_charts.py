"""The SVG charts of the HTML report: pass rate over time per spec, and each tool's latency histogram
with its percentiles marked. Plain SVG strings, no script; every figure also in a data-* attribute."""

from __future__ import annotations

import json
from datetime import datetime
from html import escape
from math import log10
from typing import Any

from scoring.report.text import duration, number

_W, _H = 520, 180
_LABEL_ROW = 13
# Width of one character of an SVG label (11px system-ui / DejaVu Sans, whose digits are 0.64 em), rounded
# up: what a label's extent is judged by when percentile labels are placed so that none overlaps another.
_CHAR_W = 7.2
_LABEL_GAP = 6
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 44, 16, 14, 30


def attr(value: object) -> str:
    return escape(str(value), quote=True)


def exact(value: object) -> str:
    """An exact figure for a data-* attribute: JSON's spelling, `null` for none."""
    return attr(json.dumps(value))


def label_extent(x: float, anchor: str, text: str) -> tuple[float, float]:
    """Left and right edge of a label drawn at `x` with this `text-anchor`, by `_CHAR_W` per character."""
    width = len(text) * _CHAR_W
    if anchor == "end":
        return x - width, x
    if anchor == "middle":
        return x - width / 2, x + width / 2
    return x, x + width


def _short_time(iso: str, bucket: str | None) -> str:
    moment = datetime.fromisoformat(iso.removesuffix("Z"))
    if bucket in ("second", "minute"):
        return moment.strftime("%H:%M:%S")
    if bucket == "hour":
        return moment.strftime("%m-%d %H:00")
    return moment.strftime("%Y-%m-%d")


def history_chart(spec: str, points: list[dict[str, Any]], bucket: str | None) -> str:
    plot_w, plot_h = _W - _PAD_L - _PAD_R, _H - _PAD_T - _PAD_B
    starts = [datetime.fromisoformat(p["start"].removesuffix("Z")).timestamp() for p in points]
    first, last = min(starts), max(starts)
    most = max(p["n_scored"] + p["n_errors"] for p in points) or 1
    slot = plot_w / max(len(points), 1)

    def x(t: float) -> float:
        return (
            _PAD_L + plot_w / 2
            if last == first
            else _PAD_L + slot / 2 + (t - first) / (last - first) * (plot_w - slot)
        )

    def y(rate: float) -> float:
        return _PAD_T + (1 - rate) * plot_h

    parts = [
        f'<svg viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img" '
        f'aria-label="pass rate of {attr(spec)} per {attr(bucket)}">'
    ]
    for rate in (0.0, 0.5, 1.0):
        parts.append(
            f'<line class="grid" x1="{_PAD_L}" x2="{_W - _PAD_R}" y1="{y(rate):.1f}" y2="{y(rate):.1f}"/>'
            f'<text x="{_PAD_L - 6}" y="{y(rate) + 4:.1f}" text-anchor="end">{rate:g}</text>'
        )
    bar_w = max(min(slot * 0.6, 28), 2)
    for p, t in zip(points, starts, strict=True):  # volume behind the line: runs scored per bucket
        height = (p["n_scored"] + p["n_errors"]) / most * plot_h * 0.35
        parts.append(
            f'<rect x="{x(t) - bar_w / 2:.1f}" y="{_PAD_T + plot_h - height:.1f}" width="{bar_w:.1f}" '
            f'height="{height:.1f}" fill="#dfe5f1"><title>{p["n_scored"]} scored, {p["n_errors"]} errors'
            "</title></rect>"
        )
    line = [
        (x(t), y(p["pass_rate"])) for p, t in zip(points, starts, strict=True) if p["pass_rate"] is not None
    ]
    if len(line) > 1:
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in line)
        parts.append(f'<polyline points="{path}" fill="none" stroke="#2f62c9" stroke-width="2"/>')
    label_each = len(points) <= 16
    for p, t in zip(points, starts, strict=True):
        if p["pass_rate"] is None:
            continue
        cx, cy = x(t), y(p["pass_rate"])
        colour = "#1f8a4c" if p["pass_rate"] >= 1 else ("#c8372d" if p["pass_rate"] <= 0 else "#2f62c9")
        parts.append(
            f'<circle class="point" cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{colour}" '
            f'data-start="{attr(p["start"])}" data-pass-rate="{exact(p["pass_rate"])}">'
            f"<title>{attr(p['start'])}: {p['n_passed']}/{p['n_scored']} passed ({number(p['pass_rate'])})"
            "</title></circle>"
        )
        if label_each:
            above = cy - 8 if cy > _PAD_T + 14 else cy + 16
            parts.append(
                f'<text x="{cx:.1f}" y="{above:.1f}" text-anchor="middle" class="label">'
                f"{number(p['pass_rate'])}</text>"
            )
    base = _PAD_T + plot_h
    parts.append(f'<line class="axis" x1="{_PAD_L}" x2="{_W - _PAD_R}" y1="{base}" y2="{base}"/>')
    ticks = [(points[0], starts[0])]
    if len(points) > 1:
        ticks.append((points[-1], starts[-1]))
    for i, (p, t) in enumerate(ticks):
        anchor = "middle" if len(ticks) == 1 else ("start" if i == 0 else "end")
        tx = x(t) if len(ticks) == 1 else (_PAD_L if i == 0 else _W - _PAD_R)
        label = attr(_short_time(p["start"], bucket))
        parts.append(f'<text x="{tx:.1f}" y="{_H - 10}" text-anchor="{anchor}">{label}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _label_groups(entry: dict[str, Any]) -> list[tuple[tuple[str, ...], float]]:
    """The percentiles to label, those that print the same (`p95, p99 350 ms`) under one label: on a
    sparse histogram p50, p95 and p99 are often one execution, and three labels for it piled up."""
    groups: dict[str, tuple[list[str], float]] = {}
    for key in ("p50", "p95", "p99"):
        value = entry[f"{key}_ms"]
        groups.setdefault(duration(value), ([], value))[0].append(key)
    return [(tuple(keys), value) for keys, value in groups.values()]


def latency_chart(entry: dict[str, Any]) -> str:
    hist = entry["histogram"]
    edges, counts = hist["edges_ms"], hist["counts"]
    log = hist["scale"] == "log"
    svg_h = _H + 20
    top = _PAD_T + 3 * _LABEL_ROW + 4  # room for three rows of percentile labels
    plot_w, plot_h = _W - _PAD_L - _PAD_R, svg_h - top - _PAD_B
    low, high = edges[0], edges[-1]

    def x(v: float) -> float:
        if high <= low:
            return _PAD_L + plot_w / 2
        v = min(max(v, low), high)
        share = (log10(v) - log10(low)) / (log10(high) - log10(low)) if log else (v - low) / (high - low)
        return _PAD_L + share * plot_w

    most = max(counts) or 1
    parts = [
        f'<svg viewBox="0 0 {_W} {svg_h}" width="{_W}" height="{svg_h}" role="img" '
        f'aria-label="latency of {attr(entry["tool"])}">'
    ]
    for tick in sorted({most, most // 2} - {0}):
        gy = top + plot_h - tick / most * plot_h
        parts.append(
            f'<line class="grid" x1="{_PAD_L}" x2="{_W - _PAD_R}" y1="{gy:.1f}" y2="{gy:.1f}"/>'
            f'<text x="{_PAD_L - 6}" y="{gy + 4:.1f}" text-anchor="end">{tick}</text>'
        )
    for i, count in enumerate(counts):
        if high <= low:
            x0, x1 = _PAD_L + plot_w * 0.4, _PAD_L + plot_w * 0.6
        else:
            x0, x1 = x(edges[i]), x(edges[i + 1])
        bar_h = count / most * plot_h
        parts.append(
            f'<rect x="{x0 + 0.5:.1f}" y="{top + plot_h - bar_h:.1f}" width="{max(x1 - x0 - 1, 1):.1f}" '
            f'height="{bar_h:.1f}" fill="#9db5e6"><title>{count} execution(s), '
            f"{duration(edges[i])}–{duration(edges[min(i + 1, len(edges) - 1)])}</title></rect>"
        )
    base = top + plot_h
    parts.append(f'<line class="axis" x1="{_PAD_L}" x2="{_W - _PAD_R}" y1="{base}" y2="{base}"/>')
    styles = {"p50": ("#1d2433", ""), "p95": ("#c8372d", "5 3"), "p99": ("#7a1f8a", "2 2")}
    rows: list[list[tuple[float, float]]] = [[] for _ in styles]  # label extents placed in each row
    for keys, value in _label_groups(entry):
        px = x(value)
        text = f"{', '.join(keys)} {duration(value)}"
        anchor = "start" if label_extent(px + 3, "start", text)[1] <= _W else "end"  # inside the chart
        lx = px - 3 if anchor == "end" else px + 3
        left, right = label_extent(lx, anchor, text)
        row = next(  # the highest row where this label meets no other: close percentiles stagger
            i
            for i, placed in enumerate(rows)
            if all(right + _LABEL_GAP <= a or b + _LABEL_GAP <= left for a, b in placed)
        )
        rows[row].append((left, right))
        label_y = _PAD_T + row * _LABEL_ROW
        for key in keys:  # every percentile keeps its marker, reaching up to the group's one label
            colour, dash = styles[key]
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            parts.append(
                f'<line class="marker" data-percentile="{key}" data-value="{exact(entry[f"{key}_ms"])}" '
                f'x1="{px:.1f}" x2="{px:.1f}" y1="{label_y + 2}" y2="{base}" stroke="{colour}" '
                f'stroke-width="1.5"{dash_attr}/>'
            )
        parts.append(
            f'<text x="{lx:.1f}" y="{label_y + 9}" text-anchor="{anchor}" class="label marker-label" '
            f'data-percentile="{" ".join(keys)}" style="fill:{styles[keys[0]][0]}">{text}</text>'
        )
    scale = "log scale" if log else "linear scale"
    parts.append(  # the scale is said at the axis's end, beside its largest value, never mid-axis
        f'<text x="{_PAD_L}" y="{svg_h - 10}" text-anchor="start">{duration(low)}</text>'
        f'<text class="axis-end" x="{_W - _PAD_R}" y="{svg_h - 10}" text-anchor="end">{duration(high)} · '
        f"{scale}</text></svg>"
    )
    return "".join(parts)

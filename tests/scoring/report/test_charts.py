"""The latency histogram's geometry (issue #20): percentile labels never overlap, however close the
percentiles are, and the axis says its scale at its end, not in the middle.

Labels are judged twice: by their drawn position and a generous width per character (every shape of
percentiles hypothesis finds), and by the boxes headless Chromium really lays the text out in."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.checks.latency_history import nearest_rank
from scoring.report._charts import label_extent, latency_chart
from scoring.report.build import histogram
from scoring.report.text import duration

_TEXT = re.compile(r"<text ([^>]*)>([^<]*)</text>")
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
WIDTH = 520
PCTS = ("p50", "p95", "p99")


def _entry(durations: list[float]) -> dict[str, object]:
    ordered = sorted(durations)
    return {
        "tool": "t",
        "n": len(ordered),
        **{f"p{p}_ms": nearest_rank(ordered, p) for p in (50, 95, 99)},
        "histogram": histogram(ordered),
    }


def _entry_with(
    p50: float, p95: float, p99: float, low: float = 1.0, high: float = 1000.0
) -> dict[str, object]:
    durations = [low, high]
    return {
        "tool": "t",
        "n": 2,
        "p50_ms": p50,
        "p95_ms": p95,
        "p99_ms": p99,
        "histogram": histogram(durations),
    }


def _texts(svg: str) -> list[tuple[dict[str, str], str]]:
    return [(dict(_ATTR.findall(attrs)), text) for attrs, text in _TEXT.findall(svg)]


def _labels(svg: str) -> list[tuple[float, float, float, str]]:
    """(left, right, baseline y, text) of each percentile label."""
    out = []
    for attrs, text in _texts(svg):
        if "marker-label" in attrs.get("class", ""):
            left, right = label_extent(float(attrs["x"]), attrs["text-anchor"], text)
            out.append((left, right, float(attrs["y"]), text))
    return out


def _assert_apart(svg: str) -> None:
    labels = _labels(svg)
    # Percentiles that print the same share one label (issue 28: on sparse histograms three labels for
    # one value piled up); each percentile is named in exactly one label.
    named = [key for *_, text in labels for key in text.split(" ", 3)[:3] if key.rstrip(",") in PCTS]
    assert sorted(k.rstrip(",") for k in named) == sorted(PCTS), labels
    for left, right, _, text in labels:
        assert left >= 0 and right <= WIDTH, (text, left, right)
    for a, b in combinations(labels, 2):
        same_row = a[2] == b[2]
        assert not (same_row and a[0] < b[1] and b[0] < a[1]), (a, b)


# Close percentiles, on either scale, anywhere on the axis: the cases that collided.
CLOSE = [
    (18, 19, 19.5, 1, 1000),  # p50 and p95 a pixel apart, log scale
    (500, 505, 510, 490, 530),  # all three close, linear scale
    (100, 205, 260, 0.0001, 460),  # p95 near p50 and p99 near p95 but not near p50 (stacked to row 1)
    (990, 995, 1000, 1, 1000),  # at the right end: labels turn left
    (1, 1, 1, 1, 1000),  # all equal at the left end
]


@pytest.mark.parametrize(("p50", "p95", "p99", "low", "high"), CLOSE)
def test_close_percentile_labels_are_placed_apart(
    p50: float, p95: float, p99: float, low: float, high: float
) -> None:
    _assert_apart(latency_chart(_entry_with(p50, p95, p99, low, high)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0.01, max_value=100_000, allow_nan=False), min_size=1, max_size=60))
def test_percentile_labels_never_overlap(durations: list[float]) -> None:
    _assert_apart(latency_chart(_entry(durations)))


@pytest.mark.parametrize("durations", [[10, 11, 12, 30], [1, 5, 900, 3000]])
def test_the_scale_is_named_at_the_axis_end_not_mid_axis(durations: list[float]) -> None:
    svg = latency_chart(_entry(durations))
    scale = "log scale" if histogram(durations)["scale"] == "log" else "linear scale"
    ends = [(attrs, text) for attrs, text in _texts(svg) if scale in text]
    assert len(ends) == 1, ends
    attrs, text = ends[0]
    assert attrs["text-anchor"] == "end" and float(attrs["x"]) >= WIDTH - 20, attrs
    assert text == f"{duration(histogram(durations)['edges_ms'][-1])} · {scale}"  # beside the largest value
    middle = [t for a, t in _texts(svg) if a.get("text-anchor") == "middle"]
    assert not any("linear" in t or "log" in t for t in middle)


def test_chromium_lays_the_labels_out_apart(tmp_path: Path) -> None:
    """The real text boxes, as a browser measures them with the page's own fonts."""
    browser = next(
        (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None
    )
    if browser is None:
        pytest.skip("no Chromium on this machine: `apt-get install -y chromium` (Debian) provides it")
    from scoring.report.html import _CSS

    charts = [latency_chart(_entry_with(*case)) for case in CLOSE]
    page = tmp_path / "charts.html"
    page.write_text(
        f"<!doctype html><html><head><meta charset=utf-8><style>{_CSS}</style></head><body>"
        + "".join(f"<figure>{svg}</figure>" for svg in charts)
        + "<pre id=out></pre><script>"
        "const out=[...document.querySelectorAll('svg')].map(s=>[...s.querySelectorAll('text.marker-label')]"
        ".map(t=>{const b=t.getBBox();return [b.x,b.y,b.width,b.height,t.textContent]}));"
        "document.getElementById('out').textContent=JSON.stringify(out);</script></body></html>"
    )
    dumped = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=90,
    )
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    boxes = json.loads(re.search(r'<pre id="out">(.*?)</pre>', dumped.stdout, re.S)[1])  # type: ignore[index]
    assert len(boxes) == len(CLOSE)
    assert [label[4] for label in boxes[-1]] == ["p50, p95, p99 1 ms"]  # all equal: one label
    for labels in boxes:
        assert 1 <= len(labels) <= 3
        for x, _, w, _, text in labels:
            assert x >= 0 and x + w <= WIDTH, text
            assert w <= label_extent(0, "start", text)[1], (text, w)  # the placing estimate is generous
        for (ax, ay, aw, ah, at), (bx, by, bw, bh, bt) in combinations(labels, 2):
            apart = ax + aw <= bx or bx + bw <= ax or ay + ah <= by or by + bh <= ay
            assert apart, (at, bt, labels)


def test_equal_percentiles_share_one_label_and_keep_their_markers() -> None:
    """A tool run once: p50 = p95 = p99, one label naming all three, in the unit the value needs."""
    svg = latency_chart(_entry([0.02269]))
    assert [text for *_, text in _labels(svg)] == ["p50, p95, p99 22.7 µs"]
    assert len(re.findall(r'<line class="marker" data-percentile="p\d\d"', svg)) == 3
    two = latency_chart(_entry([10, 20, 1240]))  # p95 = p99 = 1.24 s, p50 apart
    assert sorted(text for *_, text in _labels(two)) == ["p50 20 ms", "p95, p99 1.24 s"]

"""The HTML report laid out by headless Chromium at 1280 and 400 px, on the demo's data as a newcomer
makes it (issue 28, item 5): hyphenated task names (`same-day-dispatch`), UUID run ids, tools that take
microseconds. Names never wrap mid-word, ids stay on one line (cut with an ellipsis, whole in the
tooltip), nothing is cut off at 400 px (the tables become cards of labelled lines), every failing run
opens to its executions, and durations carry the unit they need.

The page itself has no script; the probe that measures it runs in a wrapper page holding the report
in a `srcdoc` frame of the width under test."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from collector.cli._demo import DEMO_SPECS
from collector.cli._demo_agent import ROLLOUTS, run_agent
from tests._otel import provider
from tests._server import ServeProcess

_PROBE = """
const frame = document.getElementById('report');
frame.addEventListener('load', () => {
  const doc = frame.contentDocument, win = frame.contentWindow;
  doc.querySelectorAll('details').forEach(d => { d.open = true; });
  const lines = el => {
    const range = doc.createRange();
    range.selectNodeContents(el);
    return new Set([...range.getClientRects()].filter(b => b.width > 0).map(b => Math.round(b.top))).size;
  };
  const out = {
    width: win.innerWidth,
    page_overflow: doc.documentElement.scrollWidth - doc.documentElement.clientWidth,
    tables: [...doc.querySelectorAll('table[id]')].map(t => ({
      id: t.id,
      right: Math.round(t.getBoundingClientRect().right),
      hidden: t.parentElement.scrollWidth - t.parentElement.clientWidth,
      cell_display: getComputedStyle(t.querySelector('td')).display,
    })),
    names: [...doc.querySelectorAll('td.name')].map(td => [td.textContent, lines(td)]),
    ids: [...doc.querySelectorAll('span.id')].map(s => [s.textContent, lines(s), s.title]),
    executions: doc.querySelectorAll('tr.execution').length,
  };
  document.body.setAttribute('data-layout', JSON.stringify(out));
});
"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine: `apt-get install -y chromium` (Debian) provides it")


def _headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=90,
    )


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's ten runs through the real exporter into a real serve, then `report --format html`."""
    directory = tmp_path_factory.mktemp("layout")
    server = ServeProcess(db=directory / "demo.duckdb").start()
    try:
        tracer_provider = provider(server, service="shop-assistant")
        tracer = tracer_provider.get_tracer("test")
        for rollout in ROLLOUTS:
            run_agent(tracer, rollout)
        tracer_provider.shutdown()
        time.sleep(1.0)  # complete a grace period after their last span
    finally:
        assert server.stop() == 0, server.log()
    spec = directory / "specs.yaml"
    spec.write_text(DEMO_SPECS.format(db=server.db, specs=spec))
    out = directory / "report.html"
    made = subprocess.run(
        [
            *(sys.executable, "-m", "collector.cli", "report", "--db", str(server.db), "--spec", str(spec)),
            *("--format", "html", "-o", str(out)),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=90,
    )
    assert made.returncode == 0, made.stderr
    return out


def _layout(browser: str, page: Path, width: int, tmp_path: Path) -> dict[str, Any]:
    wrapper = tmp_path / f"probe-{width}.html"
    wrapper.write_text(
        "<!doctype html><html><body style='margin:0'>"
        f'<iframe id="report" style="border:0;width:{width}px;height:900px" '
        f'srcdoc="{html.escape(page.read_text(), quote=True)}"></iframe>'
        f"<script>{_PROBE}</script></body></html>"
    )
    dumped = _headless(
        browser, tmp_path / f"profile-{width}", "--window-size=1400,1000", "--dump-dom", wrapper.as_uri()
    )
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    found = re.search(r'<body[^>]*data-layout="([^"]*)"', dumped.stdout)
    assert found, "the probe did not run"
    layout: dict[str, Any] = json.loads(html.unescape(found[1]))
    return layout


@pytest.mark.parametrize("width", [1280, 400])
def test_the_report_fits_the_screen_without_breaking_names_or_ids(
    page: Path, tmp_path: Path, width: int
) -> None:
    browser = _chromium()
    layout = _layout(browser, page, width, tmp_path)
    assert layout["width"] == width
    assert layout["page_overflow"] <= 0, layout  # nothing cut off at the right edge
    assert {t["id"] for t in layout["tables"]} == {"tasks-table", "latency-table", "failing-table"}
    for table in layout["tables"]:
        assert table["right"] <= width and table["hidden"] <= 0, table
        # Under 640 px the tables become cards of labelled lines instead of being cut off.
        assert table["cell_display"] == ("block" if width < 640 else "table-cell"), table
    names = dict(layout["names"])
    assert names["same-day-dispatch"] == 1, layout["names"]  # was same-/day-/dispatch
    assert all(lines == 1 for _, lines in layout["names"]), layout["names"]
    assert len(layout["ids"]) == 2 * 6  # run and trace id of the six failing runs
    for text, lines, title in layout["ids"]:
        assert lines == 1 and title == text, (text, lines)
    # Every failing run opened to what it called: the six failing runs of the demo made 2 + 3 + 2 + 1 + 1 + 1.
    assert layout["executions"] == 10
    shot = tmp_path / f"report-{width}.png"
    taken = _headless(
        browser,
        tmp_path / f"shot-{width}",
        f"--screenshot={shot}",
        f"--window-size={width},900",
        page.as_uri(),
    )
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    assert shot.stat().st_size > 10_000


def test_durations_carry_the_unit_they_need(page: Path) -> None:
    text = page.read_text()
    cells = dict(
        re.findall(r'<tr class="tool" data-tool="(\w+)">.*?data-field="p99_ms"[^>]*>([^<]*)</td>', text)
    )
    # The demo's tools answer in microseconds, check_stock's cold cache in ~350 ms.
    assert cells["check_stock"].endswith(" ms") and 340 <= float(cells["check_stock"].split()[0]) < 1000
    for tool in ("lookup_shipping_cutoff", "quote_shipping", "refund_order", "send_marketing_email"):
        number, unit = cells[tool].split()
        assert unit in ("µs", "ms") and float(number) < 1000, cells[tool]
        assert len(number.replace(".", "").lstrip("0")) <= 3, cells[tool]  # three significant digits
    assert not re.search(r"\b0\.0\d+ ms\b", text), "sub-millisecond values printed as 0.0… ms"


def test_trace_url_makes_each_failing_runs_trace_id_a_link(page: Path) -> None:
    """Issue 30: `report --format html --trace-url` links each trace id to the user's tracing UI."""
    linked = page.with_name("linked.html")
    made = subprocess.run(
        [
            *(sys.executable, "-m", "collector.cli", "report", "--db", str(page.with_name("demo.duckdb"))),
            *("--spec", str(page.with_name("specs.yaml")), "--format", "html", "-o", str(linked)),
            *("--trace-url", "https://tracing.example/trace/{trace_id}"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=90,
    )
    assert made.returncode == 0, made.stderr
    text = linked.read_text()
    traces = re.findall(r'<tr class="failing" [^>]*data-trace="([0-9a-f]{32})"', text)
    assert len(traces) == 6
    for trace_id in traces:
        assert f'<a href="https://tracing.example/trace/{trace_id}"><span class="id mono"' in text
    assert "href=" not in page.read_text()  # without the option the page links nowhere

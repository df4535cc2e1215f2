"""The live UI (docs/ui.md) in a real headless Chromium, against a real `tracescore serve` fed over OTLP.

The OpenTelemetry SDK exports agent runs to `serve --specs --auth-token --trace-url`; Chromium (driven
through its DevTools protocol, tests/_cdp.py) opens `/`, is asked for the token, filters the runs,
opens a failing run from the keyboard and finds its failing check's reason and the tool call behind it,
then sees a run sent while the page is open appear without a reload. At 400 and 1280 px wide no page
overflows sideways and no two pieces of text overlap. With TRACESCORE_UI_SCREENSHOTS=1 the screenshots
are written to docs/ (the ones docs/ui.md shows).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests._cdp import Browser, chromium
from tests._otel import exporter
from tests._server import ServeProcess
from tests.collector.serve.test_ui_api import CONVERSATION_SPEC, _conversation
from tests.scoring.report.test_report_html import BATCH_1, SPECS, Run, _emit

TOKEN = "ui-test-token"
TRACE_URL = "https://tracing.example/trace/{trace_id}"
DOCS = Path(__file__).resolve().parents[3] / "docs"
N_RUNS = len(BATCH_1) + 2  # and the conversation's two turns
LATE_RUN: list[Run] = [("weather", "w9-late", [("get_weather", {"city": "Oslo"}, 22, False)], [])]

# Every piece of visible text as boxes; the page's sideways overflow and the pairs of boxes that overlap.
LAYOUT_PROBLEMS = """(() => {
  const problems = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) {
    problems.push(`page is ${doc.scrollWidth} px wide in ${doc.clientWidth}`);
  }
  const boxes = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.textContent.trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) continue;
      if (r.right > doc.clientWidth + 1 || r.left < -1) {
        problems.push(`text outside the page: ${node.textContent.trim().slice(0, 40)}`);
      }
      boxes.push({ r, t: node.textContent.trim().slice(0, 40) });
    }
  }
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].r, b = boxes[j].r;
      const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (x > 1 && y > 1) problems.push(`"${boxes[i].t}" overlaps "${boxes[j].t}"`);
    }
  }
  return { problems: problems.slice(0, 20), texts: boxes.length };
})()"""


def _get(server: ServeProcess, path: str) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.http_port}{path}", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _send(server: ServeProcess, runs: list[Run], version: str, conversation: bool = False) -> None:
    tp = TracerProvider(resource=Resource.create({"service.name": "shop-agent", "service.version": version}))
    tp.add_span_processor(
        BatchSpanProcessor(exporter(server, "grpc", headers={"authorization": f"Bearer {TOKEN}"}))
    )
    _emit(tp.get_tracer("tests"), runs)
    if conversation:  # two turns, `chat-1` and `chat-2`, judged together by the spec `chat`
        _conversation(tp)
    tp.shutdown()


def _wait_verdicts(server: ServeProcess, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        verdicts: list[dict[str, Any]] = _get(server, "/api/v1/verdicts")
        if len(verdicts) >= count:
            return verdicts
        time.sleep(0.1)
    pytest.fail(f"{count} verdicts were not stored within 30 s:\n{server.log()}")


@dataclass
class Setup:
    server: ServeProcess
    browser: Browser
    verdicts: list[dict[str, Any]]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.http_port}/"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    chromium()  # skips here when no Chromium is installed
    directory = tmp_path_factory.mktemp("ui")
    (directory / "specs.yaml").write_text(SPECS + CONVERSATION_SPEC)
    server = ServeProcess(
        directory / "t.duckdb",
        extra_args=(
            "--specs",
            str(directory / "specs.yaml"),
            "--auth-token",
            TOKEN,
            "--trace-url",
            TRACE_URL,
        ),
    ).start()
    browser = None
    try:
        _send(server, BATCH_1, "1.4", conversation=True)
        verdicts = _wait_verdicts(server, len(BATCH_1) + 1)  # and the conversation's
        browser = Browser(directory / "profile")
        yield Setup(server, browser, verdicts)
    finally:
        if browser is not None:
            browser.close()
        assert server.stop() == 0, server.log()


def _rows(browser: Browser) -> list[str]:
    return list(browser.evaluate("[...document.querySelectorAll('a.row')].map(a => a.dataset.run)"))


def _check_layout(browser: Browser, name: str, width: int) -> None:
    browser.viewport(width, 900)
    time.sleep(0.2)  # one layout after the resize
    found = browser.evaluate(LAYOUT_PROBLEMS)
    assert found["texts"] > 10, found
    assert found["problems"] == [], f"{name} at {width} px: {found['problems']}"
    if os.environ.get("TRACESCORE_UI_SCREENSHOTS"):
        browser.screenshot(DOCS / f"ui-{name}-{width}.png")


def test_the_live_ui_end_to_end(setup: Setup) -> None:
    browser, server = setup.browser, setup.server
    browser.navigate(setup.url)
    # The API needs the token: the page asks for it once and keeps it in this tab (never in the URL).
    browser.wait_for("!document.getElementById('token').hidden")
    browser.evaluate("document.getElementById('token-input').focus()")
    browser.type_text(TOKEN)
    browser.press("Enter", 13, "\r")
    browser.wait_for(f"document.querySelectorAll('a.row').length === {N_RUNS}")
    assert TOKEN not in browser.evaluate("location.href")
    assert browser.evaluate("sessionStorage.getItem('tracescore.token')") == TOKEN
    assert _rows(browser) == [r["run_id"] for r in _get(server, "/api/v1/runs/page")["runs"]]

    # Filter: the failing runs of one spec, exactly those the stored verdicts say.
    failing = sorted(v["run_id"] for v in setup.verdicts if v["spec"] == "weather" and v["label"] == "fail")
    assert failing, setup.verdicts
    browser.evaluate("document.getElementById('f-spec').value = 'weather'")
    browser.evaluate("document.getElementById('f-label').value = 'fail'")
    browser.evaluate("document.querySelector('form.filters button[type=submit]').click()")
    browser.wait_for("document.body.dataset.ready.includes('label=fail')")
    browser.wait_for(f"document.querySelectorAll('a.row').length === {len(failing)}")
    assert sorted(_rows(browser)) == failing
    # A filter on an attribute: version 1.4 has every run, 1.5 none yet.
    browser.navigate(setup.url + "#/?version=1.5")
    browser.wait_for(
        "document.body.dataset.ready === '#/?version=1.5' && !!document.querySelector('.runs li.muted')"
    )
    assert _rows(browser) == []
    browser.navigate(setup.url + "#/?spec=weather&label=fail")
    browser.wait_for(f"document.querySelectorAll('a.row').length === {len(failing)}")
    _check_layout(browser, "runs", 400)
    _check_layout(browser, "runs", 1280)

    # Open a failing run from the keyboard: its row is focusable and Enter opens it.
    verdict = next(v for v in setup.verdicts if v["run_id"] == "w3" and v["spec"] == "weather")
    assert verdict["label"] == "fail"
    browser.evaluate("document.querySelector('a.row[data-run=\"w3\"]').focus()")
    assert browser.evaluate("document.activeElement.dataset.run") == "w3"
    assert browser.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    browser.press("Enter", 13, "\r")
    browser.wait_for("document.body.dataset.ready === '#/run/w3'")
    card = browser.evaluate(
        "document.querySelector('section.card.fail[aria-label=\"spec weather: fail\"]').innerText"
    )
    assert verdict["reason"] in card
    failed = [c for c in verdict["checks"] if not c["satisfied"]]
    assert failed and all(c["detail"] in card for c in failed)
    assert browser.evaluate("document.getElementById('token').hidden") is True
    # The tool call that failed the check is marked, with its arguments.
    culprit = browser.evaluate(
        "[...document.querySelectorAll('li.culprit')].map(e => [e.dataset.tool, e.innerText])"
    )
    assert [tool for tool, _ in culprit] == ["get_weather"]
    assert '"Lyon"' in culprit[0][1] and failed[0]["detail"] in culprit[0][1]
    trace_id = verdict["trace_id"]
    link = browser.evaluate(
        "[...document.querySelectorAll('a')].find(a => a.textContent.includes('open trace')).href"
    )
    assert link == TRACE_URL.replace("{trace_id}", trace_id)
    _check_layout(browser, "run", 400)
    _check_layout(browser, "run", 1280)

    # The task page: the report's figures, live.
    browser.evaluate("location.hash = '#/task/weather'")
    browser.wait_for("document.body.dataset.ready === '#/task/weather'")
    task = _get(server, "/api/v1/tasks?task=weather")[0]
    text = browser.evaluate("document.getElementById('view').innerText")
    assert f"{task['pass_rate'] * 100:.1f} %" in text and "get_weather" in text
    _check_layout(browser, "task", 400)
    _check_layout(browser, "task", 1280)

    # A conversation: its turns in order, each with its per-turn result and reason.
    conversation = next(v for v in setup.verdicts if v.get("conversation_id") == "conv-1")
    browser.evaluate("location.hash = '#/conversation/conv-1'")
    browser.wait_for("document.body.dataset.ready === '#/conversation/conv-1'")
    text = browser.evaluate("document.getElementById('view').innerText")
    assert conversation["reason"] in text and "chat-1" in text and "chat-2" in text
    failed_turn = next(t for t in conversation["turns"] if not t["passed"])
    row = browser.evaluate("[...document.querySelectorAll('tr.unsatisfied')].map(r => r.innerText).join('|')")
    assert failed_turn["run_id"] in row and failed_turn["reason"] in row
    _check_layout(browser, "conversation", 400)

    # Live: a run sent over OTLP while the runs page is open appears without a reload.
    browser.evaluate("location.hash = '#/'")
    shown = f"document.querySelectorAll('a.row').length === {N_RUNS}"
    browser.wait_for(f"document.body.dataset.ready === '#/' && {shown}")
    browser.wait_for("document.getElementById('live').textContent === 'live'")
    browser.evaluate("window.__not_reloaded = true")
    _send(server, LATE_RUN, "1.5")
    browser.wait_for("!!document.querySelector('a.row[data-run=\"w9-late\"]')", timeout_s=20)
    assert browser.evaluate("window.__not_reloaded") is True
    assert _rows(browser)[0] == "w9-late"
    assert browser.evaluate("document.querySelector('a.row[data-run=\"w9-late\"]').classList.contains('new')")
    # No script error and no refusal by the CSP; the one 401 is the first read, before the token.
    unexpected = [e for e in browser.errors if "status of 401" not in e]
    assert unexpected == [], browser.errors


def test_the_layout_check_sees_overflow_and_overlap(setup: Setup) -> None:
    """The layout probe above can fail: a too-wide box and two texts drawn on each other are found."""
    browser = setup.browser
    browser.navigate(setup.url + "#/")
    browser.wait_for("document.body.dataset.ready === '#/'")
    browser.viewport(400, 900)
    browser.evaluate(
        "(() => { const a = document.createElement('div'); a.id = 'probe'; a.textContent = 'x'.repeat(300);"
        "a.style.whiteSpace = 'nowrap'; document.body.append(a);"
        "const b = document.createElement('div'); b.id = 'probe2'; b.textContent = 'overlapping words';"
        "b.style.position = 'absolute'; b.style.top = '0'; b.style.left = '0'; document.body.append(b); })()"
    )
    problems = browser.evaluate(LAYOUT_PROBLEMS)["problems"]
    browser.evaluate("document.getElementById('probe').remove(); document.getElementById('probe2').remove()")
    assert any(p.startswith("page is") for p in problems), problems
    assert any("overlapping words" in p and "overlaps" in p for p in problems), problems

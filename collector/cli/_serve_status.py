"""What `serve` shows a person at a terminal: its live counters on the status line, read from its own
`/metrics` like any other client would, and at the end the verdicts it stored, per task and spec."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path

import duckdb

from collector.cli._logging import StatusLine
from collector.serve.settings import ServeSettings
from scoring.report.text import number, table

_SAMPLE = re.compile(r"^(?P<name>[a-z_]+)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus text exposition → name → [(labels, value)]."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"] or ""))
        try:
            out.setdefault(match["name"], []).append((labels, float(match["value"])))
        except ValueError:
            continue
    return out


def _total(metrics: dict[str, list[tuple[dict[str, str], float]]], name: str) -> int:
    return int(sum(value for _, value in metrics.get(name, [])))


def serve_status_text(metrics: dict[str, list[tuple[dict[str, str], float]]]) -> str:
    """The status line of a running serve, from its own /metrics."""
    verdicts: dict[str, int] = {"pass": 0, "fail": 0, "error": 0}
    for labels, value in metrics.get("tracescore_verdicts_total", []):
        verdicts[labels.get("label", "?")] = verdicts.get(labels.get("label", "?"), 0) + int(value)
    parts = [
        f"spans {_total(metrics, 'tracescore_spans_stored_total'):,}",
        f"open traces {_total(metrics, 'tracescore_open_traces'):,}",
        f"runs {_total(metrics, 'tracescore_runs_completed_total'):,}",
    ]
    if "tracescore_verdicts_total" in metrics:
        parts.append(f"verdicts {verdicts['pass']:,} pass · {verdicts['fail']:,} fail")
        if verdicts["error"]:
            parts[-1] += f" · {verdicts['error']:,} error"
        queued = _total(metrics, "tracescore_scoring_queue_traces")
        if queued:
            parts.append(f"scoring queue {queued:,}")
    backlog = _total(metrics, "tracescore_ingest_queue_spans")
    if backlog:
        parts.append(f"ingest queue {backlog:,}")
    if metrics.get("tracescore_store_healthy") and _total(metrics, "tracescore_store_healthy") == 0:
        parts.append("STORAGE FAILING")
    return "● serving  " + "  ".join(parts)


def fetch_metrics(base_url: str, token: str, timeout_s: float = 2.0) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(base_url + "/metrics", headers=headers)
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return str(response.read().decode())


def _api_base(db: Path) -> str | None:
    """The running serve's own HTTP API, from the `<db>.api.json` it wrote; None under TLS."""
    try:
        info = json.loads(db.with_name(db.name + ".api.json").read_text())
        base = str(info["http"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not base.startswith("http://"):
        return None  # TLS: the certificate need not name loopback; no live counters rather than no check
    return base.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:")


async def serve_with_status(
    serve: Callable[[ServeSettings, asyncio.Event], Awaitable[None]],
    settings: ServeSettings,
    status: StatusLine,
    interval_s: float = 1.0,
) -> None:
    """Run `serve`, keeping the status line up to date from the server's own /metrics."""
    ready = asyncio.Event()
    server = asyncio.ensure_future(serve(settings, ready))
    waiting = asyncio.ensure_future(ready.wait())
    await asyncio.wait({server, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    try:
        base = _api_base(settings.db) if ready.is_set() else None
        if ready.is_set() and base is None:
            status.show(f"● serving {settings.db} (no live counters over TLS)")
        while not server.done():
            if base is not None:
                try:
                    text = await asyncio.to_thread(fetch_metrics, base, settings.auth_token)
                    status.show(serve_status_text(parse_metrics(text)))
                except (OSError, ValueError):
                    pass  # starting or stopping: keep the last line
            await asyncio.wait({server}, timeout=interval_s)
    finally:
        status.clear()
    server.result()


def stored_summary(db: Path) -> str | None:
    """Per task and spec, the stored verdicts (the `task_results` view), as a table; None if none."""
    try:
        with duckdb.connect(str(db), read_only=True) as connection:
            tables = {
                r[0]
                for r in connection.execute("SELECT table_name FROM information_schema.tables").fetchall()
            }
            if "task_results" not in tables:
                return None
            rows = connection.execute(
                "SELECT task, spec, n_passed, n_scored, pass_rate, in_learning_zone FROM task_results "
                "ORDER BY task NULLS FIRST, spec"
            ).fetchall()
    except duckdb.Error:
        return None
    if not rows:
        return None
    lines = table(
        ["TASK", "SPEC", "PASSED", "PASS RATE", "ZONE"],
        [
            [task or "-", spec, f"{passed}/{scored}", number(rate), "learning zone" if zone else ""]
            for task, spec, passed, scored, rate, zone in rows
        ],
        {0: 32, 1: 28},
    )
    return "\n".join([f"verdicts stored in {db} (latest per run and spec):", *lines])

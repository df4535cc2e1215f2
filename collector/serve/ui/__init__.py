"""The live UI `serve` shows on its HTTP port (docs/ui.md): static pages and the read-only reads they ask.

Owns: the pages (HTML, CSS and plain JavaScript shipped as package data under `static/`, no build step,
nothing fetched from elsewhere), the headers they are served with (a strict Content-Security-Policy),
and the paged, indexed reads behind them: runs by filter, one run, one task, one conversation.
Takes in: the `Services` the HTTP API reaches (the read connection, the specs, `--trace-url`).
Hands on: routes added to the API's aiohttp application, under the same Host, Origin and token rules.

Public: `routes` (`UiRoutes`: the handlers and the static files), which `collector.serve.server` adds.
Private: `_reads` (pages of runs, and what the other reads share), `_details` (a run, a task, a
conversation).
"""

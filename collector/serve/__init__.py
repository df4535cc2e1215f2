"""Serving: `tracescore serve` assembled, online scoring, and everything that reads or streams verdicts.

Owns: the server's assembly and orderly stop, its settings (flag, `TRACESCORE_*` variable, YAML key
and default, declared once), online scoring on its own thread (including the catch-up of runs an
earlier process completed but never scored), the spec files it reloads, the verdict hub that feeds
watchers, the OTLP export of verdicts, the history export of completed runs as Parquet while serving
(`--export-dir`), the HTTP and gRPC APIs (runs, verdicts, tasks, read-only SQL, export windows for
`tracescore export`, `/metrics`, OpenAPI), and the live UI on the HTTP port (`ui/`, docs/ui.md).
Takes in: `CompletedTrace`s from the store's writer.
Hands on: verdicts, stored in the `verdicts` table, published to watchers (`tracescore watch`, the
gRPC `WatchVerdicts` stream) and exported as OTLP (`gen_ai.evaluation.result` events and metrics);
spans and verdicts as Parquet files (docs/export.md).

Public:
- `server`: `serve`, `start`, `stop`, `Running`, `BindError`, `PluginError`, `load_plugins` (as serve
  imports `--plugin` modules: `check` and `doctor` load specs after them).
- `settings`: `ServeSettings`, `SERVE_SETTINGS`, `resolve_serve_settings`, `Address`, `SettingError`.
- `ports`: `bind_problem`, whether an address can be listened on (asked before the file opens).
- `ui`: the live UI (docs/ui.md); the server adds its pages and reads through `routes` (`UiRoutes`).
- `memory`: the memory budget (`budget`, `Budget`, `MemoryGuard`, `parse_size`): its source, shares, refusals.

Private: `_online` (the online scorer), `_conversation_timer` (when a conversation is due),
`_catch_up`, `_spec_source`, `_hub`, `_verdict_export` (`_export_settings`: whether and where, decided
without the SDK), `_verdict_writes` (every stored verdict: the export's lock, the active partition),
`_history_export` (`--export-dir`: windows, watermarks), `_export_stream` (an export window as an Arrow
stream), `_services` (what the APIs may reach), `_api_http`, `_api_grpc`, `_queries`, `_read_lanes`
(the HTTP API's threads: people's SQL in a lane of its own), `_openapi`, `_metrics`, `_verdict_counts`
(verdicts by spec and task for `/metrics`, in a bounded number of series).
"""

"""Evidence: what a run did, read from the stored tables (never from OTLP).

Owns: the records a scorer judges (`Run`, `Execution`, `Request`, `Evidence`), which runs are
complete, loading one run's or many runs' rows, and the tool definitions captured in a run's traces
(read on demand, for `schema: from_trace`).
Takes in: a DuckDB connection to a tracescore file (the collector's live path builds the same records
from what its writer just committed: `collector/store/live_evidence.py`).
Hands on: `Evidence` per run, to the checks and the judge; `Run` to spec selection.

Public:
- `runs`: `Run`, `Execution`, `Request`, `Evidence`, `complete_runs`, `complete_run_ids`,
  `load_evidence`, `RUN_ORDER`, `complete_runs_source`.
- `definitions`: `ToolDefinition`, `DefinitionLoader`, `DefinitionSource`, `no_definitions`.
- `conversations`: `Conversation`, `complete_conversations`, `load_conversations`.
- `state`: `StateSnapshot`, `StateLoader`, `StateSource`, `no_state` (`tracescore.state` snapshots, read
  on demand, for `state` checks).
- `run_keys`: `RUN_KEY`, `keys_of`, `seq_range`, `within` (where runs' and traces' rows are in `run_traces`,
  without an index).
- `reading`: `Unread`, `ScopeSpans`, `unread_runs`, `find_unread_with` (runs whose trace tracescore
  could not read: judged `error`, their reason naming the scopes; the collector installs the finder).
"""

"""Storage: the DuckDB file, its one writer, and the runs it completes.

Owns: the stored tables (`schema`, the contract of docs/storage.md), opening the file, the Arrow rows
of every table, the one writer thread (group commits, acknowledgement only after commit, run tracking,
run completion and resolution, re-reading stored spans after a restart, timed checkpoints), the
evidence of a just-completed run handed to online scoring without a read-back, read-only SQL and the
Parquet export.
Takes in: `PreparedSpans` from the decode stage, as `WriteJob`s submitted by the receivers.
Hands on: durable rows in the file (acknowledged only once committed) and, for every run that
completes, a `CompletedTrace` with its `LiveRun`s, to online scoring (the serve stage).

Runs are completed here: the tracker keeps open traces until their root has ended and the grace
period passed (or they went idle), then resolution decides each execution's run, agent path and task.

Public:
- `schema`: `SCHEMA_VERSION`, `create_schema_sql`, the tables and views.
- `database`: `open_writer`, `open_memory_writer`, `open_reader`, `DatabaseError`, `explain_open_error`.
- `acknowledged`: `Acknowledgements` (the writer's count of acknowledged spans in `<db>.acks`, synced
  before each answer, compared at start before DuckDB may write), `verify`, `Verification`,
  `RecordDamaged`, `shortfall`, `refusal` (`tracescore doctor` runs the same comparison).
- `rows`: `PreparedSpans`, `stamped`, `spans_table` and the other tables' Arrow rows.
- `writer`: `Writer`, `WriterSettings`, `WriteJob`, `CompletedTrace`, `StoreUnavailable`,
  `STATE_REPLAY_FLOOR` (the `tracescore_state` key below which every stored span's trace is complete).
- `partitions`: `Partitions` (which partition of each written table appends go to; the writer and
  online scoring's verdicts share one, switched before each checkpoint).
- `live_evidence`: `LiveRun`, `live_evidence` (scoring evidence from what the writer just committed),
  `complete_in_memory` (the runs of complete traces resolved as the writer would, never stored).
- `unread`: `find_unread`, the runs with no execution whose stored spans tracescore does not read (or
  that show a known gap), installed into scoring when `database` is imported.
- `scope_tally`: `ScopeTally`, spans stored per instrumentation scope and how many gave executions
  (counted by the writer, shown by `/metrics`), bounded to `MAX_SCOPES` scopes.
- `sql`: `query_file`, `read_only`, `run_read_only` (one statement in a read-only transaction, capped in
  rows and bytes), `check_read_only`, `format_rows`, `render_rows`, `DEFAULT_MAX_WIDTH`, `SqlRefused`,
  `ResultTooLarge`.
- `export`: `export`, `export_rows`, `window_rows` (`tracescore export`, hive-partitioned Parquet), and
  `spans_after`, `scores_after` (the windows of `serve --export-dir`).
- `parquet_files`: `write_staged`, `publish`, `remove_stale`, `discard` (Parquet files that appear whole,
  synced, under their final names).
- `disk_space`: `DiskSpace`, `DEFAULT_RESERVE_BYTES`, `no_space` (the free space kept on the database's
  disk: asked before each group commit and checkpoint, and at start).
- `memory_settings`: `apply_memory_settings` (malloc arenas, Arrow's pool, pyarrow's pandas question:
  set first in the server's and each decode worker's process), `release_free_memory`.

Private: `_tracker` (open traces in memory), `_same_call` (one call recorded twice, or how it ended
recorded by a later span), `_resolve` (run resolution of one complete trace, a pure function),
`_members` (agents that only the whole trace shows: nested LangGraph graphs, unnamed workflows),
`_setup_runs` (a trace that only built an agent is no run),
`_turns` (a run's conversation, turn index and last-turn mark), `_stored_spans` (rows of `spans` back
into domain spans), `_checkpointer` (concurrent checkpoints on a thread of their own), `_fatal`
(exiting when DuckDB invalidates the database, to be started again), `_sql_statement` (which SQL the
read-only SQL API accepts: the clear refusal in front of the read-only transaction), `_ack_record` (the
`<db>.acks` file: two checksummed slots written in turn).
"""

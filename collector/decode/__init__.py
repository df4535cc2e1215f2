"""Decoding: OTLP request bodies into domain spans, recognised and turned into rows, off the event loop.

Owns: the two OTLP decoders (protobuf and JSON, with the checks on a span both apply), the preparing
of a request (decode, recognise, build the spans' Arrow rows), and the pool of decode worker
processes that does that beside the server (`--decode-workers`), falling back to the server's own
process while workers start or after one dies.
Takes in: a request body and its encoding, from a receiver (through `receive.ingest`).
Hands on: a `PreparedRequest`: the spans as the writer takes them (`store.rows.PreparedSpans`) and
the counts a receiver answers with (received, rejected, partial-success message).

Public:
- `from_protobuf`: `decode_protobuf`, `parse_request`; `from_json`: `decode_json`.
- `nesting`: `MAX_VALUE_DEPTH`, `DroppedValues`, `strip_deep_values` (attributes nested too deeply
  are dropped one by one, and a protobuf request past upb's parse limit is read without them).
- `decoded`: `DecodedRequest`, `UndecodableRequest` (what both decoders return or raise).
- `prepare`: `prepare_request`, `prepare_spans`, `PreparedRequest`, `Encoding`.
- `pool`: `Preparer` (the worker pool), `auto_workers`.
- `cgroups`: `own_and_parents` (the directories where a container's limits are kept: this process's
  cgroup and its parents; the memory budget reads them too).

Private: `_warm_up` (a small agent trace each worker decodes first, so real requests do not pay
first-use costs).
"""

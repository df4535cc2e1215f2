"""Receiving: the OTLP listeners, admission under load, and who may talk to them.

Owns: OTLP/gRPC (`TraceService/Export`, raw bytes, our own decoding errors) and OTLP/HTTP
(`POST /v1/traces`, protobuf or JSON, gzip capped, header and body timeouts), the capacity gate that
counts requests in spans and in bytes, queues them fairly and refuses retryably (gRPC `UNAVAILABLE` +
`RetryInfo`, HTTP 503 + `Retry-After`) rather than drop, and the listeners' security (TLS, mTLS,
bearer tokens, the Host allow-list; loopback by default), and one
rate-limited log line per refused request (`_bad_requests`: peer, protocol, reason).
Takes in: requests from exporters, on the server's event loop.
Hands on: each body to the decode stage, the prepared spans to the store's writer, and the answer
(success, partial success, or a retryable refusal) once the writer has committed them.

Public:
- `otlp_grpc`: `start_grpc`, `export_handler`; `otlp_http`: `build_app`, `start_http`.
- `ingest`: `Ingest` (the gate and the wait for the commit, shared by both receivers).
- `intake`: `Hold`, `IntakeBytes`, `cost_of` (the bytes requests in flight hold, counted before their
  bodies are read and given back at their answers).
- `security`: `Security`, `TokenInterceptor`, `http_middleware`.
"""

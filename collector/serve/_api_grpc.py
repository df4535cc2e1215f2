"""The gRPC API from proto/collector/api/v1/verdicts.proto, served on the OTLP gRPC port."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc

from collector.api.v1 import verdicts_pb2, verdicts_pb2_grpc
from collector.serve import _queries as queries
from collector.serve._hub import verdict_key
from collector.serve._services import Services

_TIMEOUT_S = 10.0


def verdict_message(data: dict[str, Any]) -> verdicts_pb2.Verdict:
    message = verdicts_pb2.Verdict(
        run_id=data["run_id"],
        trace_id=data["trace_id"],
        task=data.get("task") or "",
        spec=data["spec"],
        spec_fingerprint=data["spec_fingerprint"],
        profile=data.get("profile", ""),
        label=data["label"],
        reason=data.get("reason") or "",
        run_version=int(data.get("run_version", 0)),
        missing_tools=data.get("missing_tools", []),
        additional_tools=data.get("additional_tools", []),
        json=json.dumps(data, default=str),
        checks=[
            verdicts_pb2.Check(
                kind=c["kind"],
                target=c["target"],
                satisfied=c["satisfied"],
                detail=c["detail"],
                expected_json=json.dumps(c.get("expected")),
                observed_json=json.dumps(c.get("observed")),
            )
            for c in data.get("checks", [])
        ],
    )
    if data.get("passed") is not None:
        message.passed = data["passed"]
    if data.get("value") is not None:
        message.value = data["value"]
    return message


class VerdictsService(verdicts_pb2_grpc.VerdictsServicer):
    def __init__(self, services: Services) -> None:
        self._services = services

    async def _read(self, read: Any) -> Any:
        return await asyncio.to_thread(queries.with_cursor, self._services.connection, read, _TIMEOUT_S)

    async def GetRunVerdicts(
        self, request: verdicts_pb2.GetRunVerdictsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> verdicts_pb2.GetRunVerdictsResponse:
        if not request.run_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "run_id is required")
        rows = await self._read(
            lambda c: queries.verdicts(
                c, run=request.run_id, spec=request.spec or None, all_versions=request.all_versions
            )
        )
        return verdicts_pb2.GetRunVerdictsResponse(verdicts=[verdict_message(r) for r in rows])

    async def ListTaskResults(
        self, request: verdicts_pb2.ListTaskResultsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> verdicts_pb2.ListTaskResultsResponse:
        if request.k < 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "k must be 0 (default) or more")
        results = await self._read(
            lambda c: queries.task_results(
                c, task=request.task or None, spec=request.spec or None, k=request.k or None
            )
        )
        messages = []
        for r in results:
            message = verdicts_pb2.TaskResult(
                task=r.task or "",
                spec=r.spec,
                spec_fingerprint=r.spec_fingerprint,
                n_runs=r.n_runs,
                n_scored=r.n_scored,
                n_passed=r.n_passed,
                n_errors=r.n_errors,
                k=r.k,
                in_learning_zone=r.in_learning_zone,
            )
            for name in ("pass_rate", "mean_value", "pass_at_k", "pass_hat_k", "latency_passed"):
                value = getattr(r, name)
                if value is not None:
                    setattr(message, name, value)
            if r.execution_latency is not None:
                message.execution_latency.CopyFrom(verdicts_pb2.ExecutionLatency(**r.execution_latency))
            messages.append(message)
        return verdicts_pb2.ListTaskResultsResponse(results=messages)

    async def WatchVerdicts(
        self, request: verdicts_pb2.WatchVerdictsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[verdicts_pb2.Verdict]:
        hub = self._services.hub
        # Subscribe first, then read what is stored: nothing falls in between (duplicates are skipped).
        subscription = hub.subscribe(request.spec, request.run_id)
        seen: set[tuple[str, str, int]] = set()
        try:
            if request.include_existing:
                # Taken before the store is read: a verdict delivered and not yet stored is in one of them.
                unstored = hub.unstored(request.spec, request.run_id)
                rows = await self._read(
                    lambda c: queries.verdicts(
                        c, run=request.run_id or None, spec=request.spec or None, limit=None
                    )
                )
                for row in rows:
                    seen.add((row["run_id"], row["spec"], row["run_version"]))
                    yield verdict_message(row)
                for pending in unstored:
                    key = verdict_key(pending.verdict)
                    if key not in seen:
                        seen.add(key)
                        yield verdict_message(pending.verdict.to_dict())
            while True:
                live = await subscription.queue.get()
                if live is None:
                    return  # the server is stopping
                verdict = live.verdict
                if seen:  # only the stored ones sent above can come again, each once (as over HTTP)
                    key = (verdict.run_id, verdict.spec, verdict.run_version)
                    if key in seen:
                        seen.discard(key)
                        continue
                yield verdict_message(verdict.to_dict())
                if subscription.overflowed and subscription.queue.empty():
                    await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "watcher fell too far behind")
        finally:
            hub.unsubscribe(subscription)


def add_api(server: grpc.aio.Server, services: Services) -> None:
    verdicts_pb2_grpc.add_VerdictsServicer_to_server(VerdictsService(services), server)  # type: ignore[no-untyped-call]

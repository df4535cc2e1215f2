"""A window chooses conversations by their first turn (docs/scoring.md, "Choosing runs"): BFCL-style
conversations (collector/cli/_demo_conversation.py) sent through the real SDK to a real serve by two
versions of the agent, then scored from the file with `--where` and `--since`."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from collector.cli._demo_conversation import GOOD, GUESSING, REPAIRED, SPECS, run_conversation
from collector.cli._main import main
from tests._otel import exporter
from tests._server import ServeProcess


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    directory = tmp_path_factory.mktemp("window-conversations")
    server = ServeProcess(directory / "conv.duckdb").start()
    ids: dict[str, list[str]] = {}
    boundary = None
    try:
        for version, conversations in (("1.0", [GOOD]), ("1.1", [GUESSING, REPAIRED])):
            if version == "1.1":
                boundary = datetime.now(UTC).replace(tzinfo=None)
            tp = TracerProvider(
                resource=Resource.create({"service.name": "files", "service.version": version})
            )
            tp.add_span_processor(BatchSpanProcessor(exporter(server, "grpc")))
            tracer = tp.get_tracer("tests")
            ids[version] = [run_conversation(tracer, conversation) for conversation in conversations]
            tp.force_flush()
            tp.shutdown()
    finally:
        assert server.stop() == 0, server.log()
    (directory / "specs.yaml").write_text(SPECS)
    return {"db": server.db, "specs": directory / "specs.yaml", "ids": ids, "boundary": boundary}


def _judged(stored: dict[str, object], capsys: pytest.CaptureFixture[str], *flags: str) -> list[str]:
    args = [
        "score",
        "--db",
        str(stored["db"]),
        "--spec",
        str(stored["specs"]),
        "--no-store",
        "--format",
        "json",
    ]
    main([*args, *flags])
    return sorted(v["conversation_id"] for v in json.loads(capsys.readouterr().out))


def test_conversations_are_chosen_by_their_first_turn(
    stored: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    ids = stored["ids"]
    assert isinstance(ids, dict) and isinstance(stored["boundary"], datetime)
    assert _judged(stored, capsys) == sorted(ids["1.0"] + ids["1.1"])
    assert _judged(stored, capsys, "--where", "service.version=1.1") == sorted(ids["1.1"])
    assert _judged(stored, capsys, "--since", stored["boundary"].isoformat()) == sorted(ids["1.1"])
    assert _judged(stored, capsys, "--until", stored["boundary"].isoformat()) == ids["1.0"]
    assert _judged(stored, capsys, "--where", "task=bfcl:repair") == [ids["1.1"][1]]

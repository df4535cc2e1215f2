"""The generated gRPC API code is exactly what `make proto` produces from proto/ (no drift)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_generated_code_matches_the_proto_files(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("proto_generate", ROOT / "proto" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["proto_generate"] = module
    spec.loader.exec_module(module)
    stems = module.generate(tmp_path)
    assert stems, "no .proto file found"
    for stem in stems:
        relative = stem.relative_to(tmp_path)
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"):
            fresh = tmp_path / f"{relative}{suffix}"
            committed = ROOT / f"{relative}{suffix}"
            assert committed.read_text() == fresh.read_text(), f"{committed} is stale: run `make proto`"

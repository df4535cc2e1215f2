"""Regenerate the Python for our .proto files: `python proto/generate.py [OUTPUT_ROOT]`.

One pinned generator (grpcio-tools, pinned in pyproject's `test` extra) so the output is
reproducible; tests/collector/serve/test_proto.py regenerates into a temporary directory and fails on any
drift.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent


def generate(output_root: Path) -> list[Path]:
    sources = sorted(p.relative_to(ROOT) for p in ROOT.rglob("*.proto"))
    for source in sources:
        code = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{ROOT}",
                f"--python_out={output_root}",
                f"--pyi_out={output_root}",
                f"--grpc_python_out={output_root}",
                str(source),
            ]
        )
        if code != 0:
            raise SystemExit(f"protoc failed on {source}")
    return [output_root / s.with_suffix("") for s in sources]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent
    for stem in generate(target):
        print(f"generated {stem}_pb2.py, {stem}_pb2.pyi, {stem}_pb2_grpc.py")

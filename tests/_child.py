"""Python code run in a fresh interpreter with this checkout first on its path: for what only a new
process shows (which modules an import loads, which processes a call starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def child_json(code: str) -> Any:
    """The JSON value `code` prints on its last line of output."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])

"""`tracescore --version` (issue #20)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys


def test_version_names_the_installed_package() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "collector.cli", "--version"], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"tracescore {importlib.metadata.version('tracescore')}"

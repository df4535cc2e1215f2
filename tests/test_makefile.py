"""The README's two commands on a fresh clone, in either order (issue 28): `make demo` installs the
runtime alone (`pip install -e .`), not the 1.8 GB test extra; `make test` installs the test extra; and
neither installs twice whichever ran first.

The real Makefile is run by the real `make`, with `PYTHON` a stand-in interpreter that records every
command it is asked to run: `-m venv DIR` makes a `DIR/bin` of stand-ins (python, and after an install
tracescore, ruff, mypy), so no package is downloaded and nothing outside the scratch folder changes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Records its name and arguments; as `python -m venv DIR` creates DIR/bin with copies of itself, as
# `python -m pip install …` adds the console scripts an install would.
STAND_IN = """#!/bin/sh
echo "$(basename "$0") $*" >> "$MAKE_LOG"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ] && [ "$3" = "install" ]; then
    for tool in tracescore ruff mypy; do cp "$0" "$(dirname "$0")/$tool"; done
fi
exit 0
"""


def _make(target: str, tmp_path: Path) -> list[str]:
    """The commands `make TARGET` ran through the stand-ins, in order."""
    log = tmp_path / "make.log"
    log.write_text("")
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(ROOT),
            target,
            f"VENV={tmp_path / 'venv'}",
            f"PYTHON={tmp_path / 'python3'}",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, "MAKE_LOG": str(log)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return log.read_text().splitlines()


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    stand_in = tmp_path / "python3"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    return tmp_path


def _installs(commands: list[str]) -> list[str]:
    return [c for c in commands if " -m pip install " in f" {c} " and "--upgrade pip" not in c]


def test_demo_first_installs_the_runtime_alone_then_test_adds_the_test_extra(fresh: Path) -> None:
    demo = _make("demo", fresh)
    assert demo[0].endswith(f"-m venv {fresh / 'venv'}")
    assert _installs(demo) == ["python -m pip install --quiet -e ."]
    assert demo[-1] == "tracescore demo"
    test = _make("test", fresh)
    assert _installs(test) == ["python -m pip install --quiet -e .[test]"]
    assert not any("-m venv" in c for c in test)
    assert test[-1] == "python -m pytest -q -n 2 --dist loadfile"
    assert _installs(_make("demo", fresh)) == []  # nothing more to install


def test_test_first_installs_the_test_extra_and_demo_then_installs_nothing(fresh: Path) -> None:
    test = _make("test", fresh)
    assert _installs(test) == ["python -m pip install --quiet -e .[test]"]
    demo = _make("demo", fresh)
    assert demo == ["tracescore demo"]
    assert _make("serve", fresh) == ["tracescore serve"]

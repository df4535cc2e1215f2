"""`collector` and `scoring` load their public names when first read (issue 33): each name still
resolves to what it always was, whatever was imported before, in a fresh process each time."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("package", ["collector", "scoring"])
def test_every_public_name_resolves_to_its_home(package: str) -> None:
    _run(
        f"""
        import importlib, sys
        package = importlib.import_module({package!r})
        for name in package.__all__:
            value = getattr(package, name)
            home = package._HOMES[name]
            assert value is getattr(sys.modules[home], name), name
        assert set(package.__all__) <= set(dir(package))
        namespace = {{}}
        exec("from {package} import *", namespace)
        assert set(package.__all__) <= set(namespace)
        """
    )


def test_judge_is_the_function_even_after_its_stage_was_imported() -> None:
    # `scoring.judge` is a stage and a public function; a stage imported first used to take the name.
    _run(
        """
        import sys
        import scoring.judge.conversation
        from scoring import judge
        assert judge is sys.modules["scoring.judge.run"].judge, judge
        """
    )


def test_the_check_registry_read_first_holds_the_catalogue_in_order() -> None:
    # A user's check registered through `scoring` comes after every built-in one, as before.
    _run(
        """
        from scoring import CHECKS, register_check
        assert "schema" in CHECKS and "state" in CHECKS
        register_check("mine")(lambda spec, evidence: [])
        assert list(CHECKS)[-1] == "mine"
        """
    )


def test_a_check_module_imported_first_leaves_the_verdict_order_as_it_was() -> None:
    # Importing `scoring` no longer registers the catalogue first; a check module read on its own before
    # it (as tests of it do) registered early, and the set-based scorer then took the catalogue for a
    # user's check and judged every spec in Python.
    _run(
        """
        import scoring.checks._rules, scoring.checks._trajectory
        from scoring.batch._plan import BUILT_IN_CHECKS, not_compiled
        from scoring import CHECKS, Spec
        assert tuple(CHECKS) == BUILT_IN_CHECKS, tuple(CHECKS)
        assert not_compiled(Spec.model_validate({"name": "s", "expected_tools": ["a"]})) is None
        """
    )

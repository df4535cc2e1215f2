"""The error a spec that cannot be used raises, apart from the models so that catching it (the CLI
does, for every command) loads no pydantic (issue 33)."""

from __future__ import annotations


class SpecError(ValueError):
    """A spec file cannot be used; the message names the file, the spec, the key and the fix."""

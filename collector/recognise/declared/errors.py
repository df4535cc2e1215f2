"""The error a conventions file that cannot be used raises, apart from the models so that catching it (the
CLI does, for every command) loads no pydantic."""

from __future__ import annotations


class ConventionsError(ValueError):
    """A conventions file cannot be used; the message names the file, the line, the key and the fix."""

"""The mistake in how a command was called, apart from the commands so that `main` can catch it without
importing them (a server never loads the scoring commands: issue 33)."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in how the command was called."""

"""A stage of tracescore: docs/architecture.md."""

"""tracescore's scoring: specs, evidence-only checks, verdicts (reads the stored tables, never OTLP)."""

__all__: list[str] = []

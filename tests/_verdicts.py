"""A passing verdict of a made-up run, for tests of what carries verdicts (the hub, the verdict store)."""

from __future__ import annotations

from scoring import verdict_from_dict
from scoring.verdict.record import Verdict


def passing_verdict(run: str, spec: str = "s") -> Verdict:
    return verdict_from_dict(
        {
            "run_id": run,
            "trace_id": "t",
            "task": None,
            "spec": spec,
            "spec_fingerprint": "f",
            "profile": "default",
            "passed": True,
            "value": 1.0,
            "label": "pass",
            "checks": [],
            "missing_tools": [],
            "additional_tools": [],
            "failed_argument_checks": [],
            "latency_violations": [],
            "reason": None,
            "run_version": 1,
        }
    )

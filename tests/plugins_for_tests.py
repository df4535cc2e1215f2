"""A check plugin for the online-scoring tests: loaded with `tracescore serve --plugin`.

It registers through the same door as the built-in checks. For a spec named `explodes` it raises;
for a spec named `slow` it takes its time. Every other spec it leaves alone.
"""

from __future__ import annotations

import time

from scoring import CheckResult, Scoped, Spec, register_check


@register_check("test_plugin")
def misbehaving(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    if spec.name == "explodes":
        raise RuntimeError("this scorer always raises")
    if spec.name == "slow":
        time.sleep(1.5)
        return [CheckResult("test_plugin", "slow", True, "took 1.5 s")]
    return []

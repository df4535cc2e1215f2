"""Regexes in specs cannot stall scoring (docs/reliability.md, promise 4).

Spec regexes and JSON Schema patterns run on RE2 (scoring/spec/regex.py): no backtracking, time linear in
the text. In the running server, a pattern that would keep Python's `re` busy for minutes (and, with
the GIL held, the receivers too) against a hostile argument gives its verdict at once. The load-time
refusals are in tests/scoring/spec/test_spec_catalogue.py; catastrophic patterns everywhere a spec carries
one, and
random ones, are fuzzed in tests/test_fuzz.py.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from scoring.spec.regex import MAX_PATTERN_CHARS, fullmatch, pattern_problem, search
from tests._otel import provider
from tests._server import ServeProcess
from tests.collector.serve.test_online import TOOL, Agent, wait_verdicts

# (a+)+$ against 32 a's and a "!": Python's re doubles its work with each "a" (0.2 s at 22): minutes.
HOSTILE = "a" * 32 + "!"
SPECS = f"""
name: redos
argument_rules:
  {TOOL}:
    values:
      region: {{regex: "(a+)+$"}}
---
name: redos-schema
schema:
  {TOOL}:
    type: object
    properties:
      region: {{type: string, pattern: "^(a|aa)+$"}}
"""


def test_a_catastrophic_regex_on_a_hostile_argument_is_judged_at_once_by_a_running_server(
    tmp_path: Path,
) -> None:
    (tmp_path / "specs.yaml").write_text(SPECS)
    server = ServeProcess(tmp_path / "redos.duckdb", extra_args=("--specs", str(tmp_path / "specs.yaml")))
    server.start()
    tracer_provider = provider(server, "grpc")
    try:
        agent = Agent(tracer_provider)
        started = time.monotonic()
        hostile = agent.run("redos", [(TOOL, {"region": HOSTILE})])
        fine = agent.run("redos", [(TOOL, {"region": "aaaa"})])
        got = {
            (v["run_id"], v["spec"]): v
            for run in (hostile, fine)
            for v in wait_verdicts(server, 2, run=run.run_id)
        }
        elapsed = time.monotonic() - started
        assert {key: v["label"] for key, v in got.items()} == {
            (hostile.run_id, "redos"): "fail",
            (hostile.run_id, "redos-schema"): "fail",
            (fine.run_id, "redos"): "pass",
            (fine.run_id, "redos-schema"): "pass",
        }
        (rules,) = got[(hostile.run_id, "redos")]["checks"]
        assert "does not match regex '(a+)+$' (whole string)" in rules["detail"]
        (schema,) = got[(hostile.run_id, "redos-schema")]["checks"]
        assert schema["observed"][0]["rule"] == "pattern"
        assert elapsed < 10, f"verdicts took {elapsed:.1f} s"
        tracer_provider.shutdown()
        assert server.stop() == 0, server.log()
    finally:
        server.kill()


def test_matching_time_is_linear_in_the_text() -> None:
    rng = random.Random(8)
    megabyte = "".join(rng.choice("ab") for _ in range(1_000_000))
    # The first is the classic; the second defeats RE2's DFA cache, its slowest case (~1 µs a char).
    for pattern in ("(a+)+$", "(?:(?:a|b)*a(?:a|b){20}){5}c"):
        started = time.perf_counter()
        assert not fullmatch(pattern, megabyte)
        assert not search(pattern, megabyte + "!")
        assert time.perf_counter() - started < 5


def test_text_json_can_carry_but_utf8_cannot_matches_without_raising() -> None:
    assert fullmatch(".", "\ud800")  # a lone surrogate, which json.loads accepts
    assert not fullmatch("a", "\ud800")
    assert fullmatch("é+", "éé") and search(r"\pL", "1é")


def test_pattern_length_is_bounded() -> None:
    assert pattern_problem("a" * MAX_PATTERN_CHARS) is None
    assert pattern_problem("a" * (MAX_PATTERN_CHARS + 1)) == (
        f"it has {MAX_PATTERN_CHARS + 1} characters (at most {MAX_PATTERN_CHARS}): shorten it"
    )

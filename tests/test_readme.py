"""Every command in README.md runs as printed (issue #20: printed commands that did not run).

The README's shell blocks are read from the file itself, by section, and each line is run verbatim by
bash in a scratch folder that has what a fresh clone has after `make`: `.venv` (a link to the
virtualenv running these tests) and the files the README asks the reader to save (its own `spec.yaml`,
`agent.py` and `specs/same-day-dispatch.yaml` blocks). Nothing is rewritten: the ports are moved with the
documented variables (`TRACESCORE_GRPC`, `TRACESCORE_HTTP`, and `OTEL_EXPORTER_OTLP_ENDPOINT` for the
agent), so the test never fights another process for 4317/4318. Between commands the test waits as a
reader would: for `serve` to say it is serving, for the agent's run to complete.

A shell block in a section that no scenario below runs, or a line of a run section without an expected
outcome, fails `test_every_readme_command_is_run_or_excused`: a new README command cannot slip through
untested. The commands `tracescore demo` prints are run as printed by tests/collector/cli/test_demo.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._server import free_port

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

# Commands that do not run here, each with the reason. Matched on the command before its comment.
NOT_RUN = {
    "make demo": "creates .venv and installs first; what it runs, `tracescore demo`, and every command the "
    "demo prints run in tests/collector/cli/test_demo.py",
    "make test": "is this very suite (lint, types, tests); running it from inside itself would recurse",
}
# Sections whose every shell line a scenario below runs.
TOUR = "A five-minute tour with a real framework (pydantic-ai)"
NEXT_TO_AGENT = "Running it next to your agent"
SCORING = "Scoring"
CI = "A CI gate that fails closed"
RUN_SECTIONS = (TOUR, NEXT_TO_AGENT, SCORING, CI)


@dataclass(frozen=True)
class Block:
    section: str
    language: str
    text: str
    caption: str  # the paragraph of prose just before the block

    @property
    def commands(self) -> list[str]:
        return [line for line in self.text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def readme_blocks() -> list[Block]:
    blocks: list[Block] = []
    section, caption = "", ""
    paragraph: list[str] = []
    lines = README.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section, caption, paragraph = line[3:].strip(), "", []
        elif line.startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            text = "\n".join(lines[i + 1 : end]) + "\n"
            blocks.append(Block(section, line[3:].strip(), text, " ".join(paragraph) or caption))
            caption, paragraph, i = "", [], end
        elif not line.strip():
            caption, paragraph = (" ".join(paragraph), []) if paragraph else (caption, paragraph)
        else:
            paragraph.append(line.strip())
        i += 1
    return blocks


def _bare(command: str) -> str:
    """The command without its trailing comment (README comments start with two spaces and `#`)."""
    return re.split(r"\s{2,}#", command, maxsplit=1)[0].strip()


_FILE = r"`([\w./-]+\.(?:yaml|py))`"


def _saved_files() -> dict[str, str]:
    """The blocks the README asks the reader to save: a paragraph that starts with the file's name
    (`` `agent.py` (…): ``) or says `` saved as `specs/x.yaml`: ``, just before the block."""
    files = {}
    for block in readme_blocks():
        if block.language not in ("yaml", "python") or not block.caption.endswith(":"):
            continue
        named = re.match(_FILE, block.caption) or re.search(r"saved as " + _FILE, block.caption)
        if named:
            files[named[1]] = block.text
    return files


def _section_commands(section: str) -> list[str]:
    return [c for b in readme_blocks() if b.section == section and b.language == "sh" for c in b.commands]


# --- a reader's shell --------------------------------------------------------------------------------


class Shell:
    """One bash, fed the README's lines one at a time like a person typing them: a job started with `&`
    stays its job (`kill %1` finds it). Each command's output goes to its own files."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.directory = directory
        self.process = subprocess.Popen(
            ["bash", "--norc", "--noprofile"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=directory,
            env=env,
            text=True,
            start_new_session=True,  # its jobs, and only they, can be stopped together if a test fails
        )
        self.count = 0

    def run(self, command: str, timeout_s: float = 120) -> Result:
        self.count += 1
        out, err, rc = (self.directory / f".cmd{self.count}.{kind}" for kind in ("out", "err", "rc"))
        assert self.process.stdin is not None
        # The braces keep the line exactly as written (a trailing comment ends at the newline).
        self.process.stdin.write(f"{{ {command}\n}} >{out.name} 2>{err.name}\necho $? >{rc.name}\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout_s
        while not (rc.exists() and rc.read_text().strip()):
            assert time.monotonic() < deadline, f"{command!r} did not finish in {timeout_s} s"
            time.sleep(0.05)
        return Result(command, int(rc.read_text()), out, err)

    def close(self) -> int:
        """The shell's exit status once its jobs ended; after a failed step, its jobs are killed."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write("wait\nexit\n")  # the reader's jobs end before the shell does
            self.process.stdin.close()
            return self.process.wait(60)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
            return -1


@dataclass
class Result:
    command: str
    code: int
    out_path: Path
    err_path: Path

    @property
    def out(self) -> str:
        return self.out_path.read_text()

    @property
    def err(self) -> str:
        return self.err_path.read_text()

    def __str__(self) -> str:
        return f"{self.command}\n(exit {self.code})\nstdout:\n{self.out}\nstderr:\n{self.err}"


def _wait_for(what: str, ready: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
        time.sleep(0.1)


def _completed_runs(http_port: int) -> int:
    """Runs the server has completed, from its own /metrics (as `serve`'s status line reads them)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return 0
    found = re.search(r"^tracescore_runs_completed_total (\S+)$", text, re.M)
    return int(float(found[1])) if found else 0


@dataclass
class Clone:
    directory: Path
    env: dict[str, str]
    grpc_port: int
    http_port: int


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[Clone]:
    """A folder as the README's reader has it: `.venv` installed, the files it asks to save, saved."""
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    for name, text in _saved_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    grpc_port, http_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TRACESCORE_"))}
    env.update(
        TRACESCORE_GRPC=f"127.0.0.1:{grpc_port}",
        TRACESCORE_HTTP=f"127.0.0.1:{http_port}",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{grpc_port}",
    )
    yield Clone(tmp_path, env, grpc_port, http_port)


# --- the README's own structure ----------------------------------------------------------------------


def test_every_readme_command_is_run_or_excused() -> None:
    blocks = [b for b in readme_blocks() if b.language == "sh"]
    assert blocks, "no shell block found in README.md"
    for block in blocks:
        for command in block.commands:
            if block.section in RUN_SECTIONS:
                expected = {TOUR: TOUR_EXPECTED, CI: CI_EXPECTED}.get(block.section, SCORING_EXPECTED)
                if block.section == NEXT_TO_AGENT:
                    assert ".venv/bin/tracescore serve" in command, command  # the server of the scoring run
                    continue
                assert any(key in _bare(command) for key in expected), (
                    f"README command without an expected outcome in tests/test_readme.py: {command}"
                )
            else:
                assert _bare(command) in NOT_RUN, (
                    f"README command in section {block.section!r} is neither run by tests/test_readme.py nor "
                    f"listed in its NOT_RUN with a reason: {command}"
                )
    for name in ("spec.yaml", "agent.py", "specs/same-day-dispatch.yaml"):
        assert name in _saved_files(), f"README no longer gives {name}"


# --- the tour ----------------------------------------------------------------------------------------

# What each tour command must do, keyed by a piece of the command: (exit code, a piece of its stdout).
TOUR_EXPECTED = {
    "tracescore serve": (0, ""),
    "python agent.py": (0, "15:00"),
    "tracescore score": (0, "PASS"),
    "tracescore sql": (0, "lookup_shipping_cutoff"),
    "kill %1": (0, ""),
}


def _expected(table: dict[str, tuple[int, str]], command: str) -> tuple[int, str]:
    return next(value for key, value in table.items() if key in _bare(command))


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="the README's commands are bash commands")
def test_the_tour_runs_as_printed(clone: Clone) -> None:
    commands = _section_commands(TOUR)
    shell = Shell(clone.directory, clone.env)
    results = []
    try:
        for command in commands:
            result = shell.run(command)
            results.append(result)
            code, needle = _expected(TOUR_EXPECTED, command)
            assert result.code == code, str(result)
            assert needle in result.out, str(result)
            if _bare(command).endswith("&"):  # the reader waits for serve to say it serves
                log = result.err_path
                _wait_for("tracescore serving", lambda: "tracescore serving" in log.read_text(), 60)  # noqa: B023
            if "agent.py" in command:  # and for the agent's run to complete (--grace-seconds)
                _wait_for("completed run", lambda: _completed_runs(clone.http_port) >= 1, 30)
    finally:
        shell_code = shell.close()
    assert shell_code == 0
    serve = results[0]
    assert "stopped:" in serve.err and "1 runs completed" in serve.err, serve  # kill %1 stopped it cleanly
    score = next(r for r in results if "tracescore score" in r.command)
    assert re.search(r"same-day-dispatch +cutoff +PASS", score.out), score  # the task id, not `-`
    sql = next(r for r in results if "tracescore sql" in r.command)
    assert re.search(r"same-day-dispatch +lookup_shipping_cutoff", sql.out), sql


# --- running it next to your agent, and scoring --------------------------------------------------------

# The runs of the tour's agent fail the Scoring spec by design: it never calls quote_shipping.
SCORING_EXPECTED = {
    "--format json > before.json": (1, ""),
    "--format json > after.json": (1, ""),
    "--format html -o report.html": (0, ""),
    "report --db tracescore.duckdb --spec specs/ --k 3": (0, "0/3"),
    "score  --db tracescore.duckdb --spec specs/": (1, "FAIL"),
    "diff before.json after.json": (0, "same-day-dispatch"),
    "tracescore sql": (0, "lookup_shipping_cutoff"),
}


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="the README's commands are bash commands")
def test_serving_next_to_an_agent_and_scoring_run_as_printed(clone: Clone) -> None:
    (serve_command,) = _section_commands(NEXT_TO_AGENT)
    log = (clone.directory / "serve.log").open("w")
    # In a terminal of its own, as the README runs it: not a job of the reader's shell.
    server = subprocess.Popen(
        ["bash", "-c", serve_command], cwd=clone.directory, env=clone.env, stdout=log, stderr=log
    )
    shell = Shell(clone.directory, clone.env)
    try:
        _wait_for(
            "tracescore serving", lambda: "tracescore serving" in (clone.directory / "serve.log").read_text()
        )
        agent = next(c for c in _section_commands(TOUR) if "agent.py" in c)
        for _ in range(3):  # three rollouts of the task
            assert shell.run(agent).code == 0
        _wait_for("three completed runs", lambda: _completed_runs(clone.http_port) >= 3, 30)
        for command in _section_commands(SCORING):
            result = shell.run(command)
            code, needle = _expected(SCORING_EXPECTED, command)
            assert result.code == code, str(result)
            assert needle in result.out, str(result)
    finally:
        shell_code = shell.close()
        server.terminate()  # what Ctrl-C or `kill` does in the server's own terminal
        code = server.wait(60)
        log.close()
    assert shell_code == 0
    assert code == 0, (clone.directory / "serve.log").read_text()
    before = json.loads((clone.directory / "before.json").read_text())
    assert len(before) == 3 and {v["task"] for v in before} == {"same-day-dispatch"}
    assert all(v["label"] == "fail" and "quote_shipping" in v["reason"] for v in before), before
    assert (clone.directory / "report.html").read_text().startswith("<!doctype html>")


# --- a CI gate that fails closed ------------------------------------------------------------------------

# The tour's agent fails the Scoring spec by design (it never calls quote_shipping): exit 1 with it, and
# exit 3 (nothing scored) when the job's agent sent nothing.
CI_EXPECTED = {
    "tracescore check specs/": (0, "ok"),
    "tracescore serve": (0, ""),
    "python agent.py": (0, "15:00"),
    "tracescore score": (1, ""),
    "kill %1": (0, ""),
}


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="the README's commands are bash commands")
@pytest.mark.parametrize("agent_ran", [True, False], ids=["with-the-agent", "empty-window"])
def test_the_ci_gate_runs_as_printed_and_fails_on_an_empty_window(clone: Clone, agent_ran: bool) -> None:
    shell = Shell(clone.directory, clone.env)
    results = []
    try:
        for command in _section_commands(CI):
            if "agent.py" in command and not agent_ran:
                continue  # a job whose agent exported nowhere
            result = shell.run(command)
            results.append(result)
            code, needle = _expected(CI_EXPECTED, command)
            if "tracescore score" in command and not agent_ran:
                code = 3
            assert result.code == code, str(result)
            assert needle in result.out, str(result)
            if _bare(command).endswith("&"):
                log = result.err_path
                _wait_for("tracescore serving", lambda: "tracescore serving" in log.read_text(), 60)  # noqa: B023
    finally:
        shell_code = shell.close()
    assert shell_code == 0
    score = next(r for r in results if "tracescore score" in r.command)
    junit = ET.parse(clone.directory / "tracescore.xml").getroot()
    cases = list(junit.iter("testcase"))
    if agent_ran:
        assert len(cases) == 1 and cases[0].get("classname") == "same-day-dispatch/same-day-dispatch"
        failure = cases[0].find("failure")
        assert failure is not None and "quote_shipping" in (failure.get("message") or ""), score
    else:
        assert "tracescore: nothing scored: no runs in the window" in score.err, score
        assert [c.get("name") for c in cases] == ["nothing scored"], score

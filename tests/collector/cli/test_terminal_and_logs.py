"""What a person sees at a terminal, and what a log pipeline reads everywhere else.

- serve with stdout/stderr not a terminal (a file here, a container's log driver in production): every
  line is one JSON object with time, level, logger and message, errors included.
- serve on a terminal (a real pseudo-terminal): readable lines, a live status line, and at the end a
  table of the verdicts it stored. score/report on a terminal: a progress bar on stderr.
"""

from __future__ import annotations

import fcntl
import io
import json
import logging
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
import warnings
from datetime import datetime
from pathlib import Path

import pytest

from collector.cli._logging import setup_logging
from tests._otlp import new_span_id, new_trace_id, post_json, request, span
from tests._server import ServeProcess, free_port

AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop", "tracescore.task.id": "t1"}
TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
SPEC = "name: lookup\nselect: {task: t1}\nexpected_tools: [lookup]\n"


def _agent_run() -> dict[str, object]:
    trace_id, root = new_trace_id(), new_span_id()
    start = time.time_ns()
    return request(
        [
            span(
                trace_id, root, "invoke_agent shop", start_ns=start, duration_ns=5_000_000, attributes=AGENT
            ),
            span(
                trace_id, new_span_id(), "execute_tool lookup", parent=root, start_ns=start, attributes=TOOL
            ),
        ]
    )


def _json_lines(text: str) -> list[dict[str, object]]:
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)  # every line parses, or this test fails on it
        assert isinstance(record, dict), line
        assert {"time", "level", "logger", "message"} <= set(record), line
        datetime.fromisoformat(str(record["time"]).replace("Z", "+00:00"))
        assert record["level"] in ("debug", "info", "warning", "error", "critical"), line
        records.append(record)
    return records


def test_serve_writes_json_lines_when_not_on_a_terminal(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    server = ServeProcess(tmp_path / "t.duckdb", extra_args=("--specs", str(spec))).start()
    assert post_json(server.http_url, _agent_run())[0] == 200
    assert server.stop() == 0
    records = _json_lines(server.log())
    messages = [str(r["message"]) for r in records]
    assert any(m.startswith("tracescore serving: OTLP/gRPC") for m in messages), messages
    assert any(m.startswith("scoring online with 1 spec(s): lookup") for m in messages), messages
    assert any(m.startswith("stopped: ") and "1 runs completed" in m for m in messages), messages
    assert {r["logger"] for r in records} >= {"tracescore.serve"}
    assert all(r["level"] == "info" for r in records)
    assert "\x1b[" not in server.log()  # no terminal escapes in a file


def test_a_serve_that_cannot_start_says_why_in_json(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "collector.cli", "serve", "--db", str(tmp_path / "t.duckdb")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, "TRACESCORE_GRACE_SECONDS": "soon"},
    )
    assert result.returncode == 2
    (record,) = _json_lines(result.stderr)
    assert record["level"] == "error"
    assert "TRACESCORE_GRACE_SECONDS='soon'" in str(record["message"])
    assert "TRACESCORE_GRACE_SECONDS=2" in str(record["message"])  # the fix


def test_log_format_text_overrides_the_choice(tmp_path: Path) -> None:
    server = ServeProcess(tmp_path / "t.duckdb", extra_args=("--log-format", "text")).start()
    assert server.stop() == 0
    lines = [line for line in server.log().splitlines() if line]
    assert lines and all(re.match(r"^\d\d:\d\d:\d\d INFO +tracescore\.serve: ", line) for line in lines), (
        lines
    )


def test_json_records_carry_exceptions_extras_warnings_and_thread_crashes() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    level, hooks = root.level, (sys.excepthook, threading.excepthook)
    try:
        assert setup_logging("json", "info", stream=stream) == "json"
        log = logging.getLogger("tracescore.test")
        try:
            raise ValueError("broken spec")
        except ValueError:
            log.exception("scoring failed", extra={"run_id": "r1"})
        log.info("multi\nline \u00e9")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("old option", UserWarning, stacklevel=1)
        thread = threading.Thread(target=lambda: 1 / 0, name="crasher")
        thread.start()
        thread.join()
    finally:
        setup_logging("text", "warning", stream=io.StringIO())
        for handler in list(root.handlers):
            if getattr(handler, "_tracescore_handler", False):
                root.removeHandler(handler)
        root.setLevel(level)
        sys.excepthook, threading.excepthook = hooks
        logging.captureWarnings(False)
    records = _json_lines(stream.getvalue())
    failed, multi, warned, crashed = records
    assert failed["level"] == "error" and failed["run_id"] == "r1" and failed["error_type"] == "ValueError"
    assert "broken spec" in str(failed["exception"])
    assert multi["message"] == "multi\nline \u00e9"  # one line of JSON all the same
    assert warned["logger"] == "py.warnings" and "old option" in str(warned["message"])
    assert crashed["level"] == "critical" and "crasher" in str(crashed["message"])
    assert crashed["error_type"] == "ZeroDivisionError"


# --- a real terminal -------------------------------------------------------------------------------


class Terminal:
    """A process whose stdin, stdout and stderr are a pseudo-terminal of 120 columns."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "collector.cli", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "TERM": "xterm-256color", **(env or {})},
            close_fds=True,
        )
        os.close(slave)
        self.output = b""

    def read(self, until: str | None = None, timeout_s: float = 30.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if until is not None and until in self.output.decode(errors="replace"):
                break
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the process closed the terminal
                    break
                if not chunk:
                    break
                self.output += chunk
            elif self.process.poll() is not None and until is None:
                break
        return self.output.decode(errors="replace")

    def close(self) -> int:
        code = self.process.wait(30)
        self.read(timeout_s=2)
        os.close(self.master)
        return code


def test_serve_on_a_terminal_shows_a_status_line_and_a_table_at_the_end(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    http = free_port()
    terminal = Terminal(
        "serve",
        *("--db", str(tmp_path / "t.duckdb"), "--grpc", f"127.0.0.1:{free_port()}"),
        *("--http", f"127.0.0.1:{http}", "--grace-seconds", "0.2", "--specs", str(spec)),
    )
    try:
        terminal.read(until="tracescore serving")
        assert post_json(f"http://127.0.0.1:{http}/v1/traces", _agent_run())[0] == 200
        screen = terminal.read(until="verdicts 1 pass · 0 fail")
        assert "● serving  spans 2" in screen, screen
    finally:
        terminal.process.send_signal(signal.SIGTERM)
        code = terminal.close()
    screen = terminal.output.decode(errors="replace")
    assert code == 0, screen
    assert re.search(r"\d\d:\d\d:\d\d \x1b\[36mINFO", screen), screen  # coloured, readable lines
    assert "\r\x1b[2K" in screen  # the status line redraws in place
    assert '"level"' not in screen  # no JSON on a terminal
    summary = screen[screen.index("verdicts stored in") :]
    assert re.search(r"t1 +lookup +1/1 +1\.00", summary), summary


def test_report_on_a_terminal_shows_progress(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    server = ServeProcess(tmp_path / "t.duckdb").start()
    for _ in range(3):
        assert post_json(server.http_url, _agent_run())[0] == 200
    assert server.stop() == 0
    terminal = Terminal("report", "--db", str(server.db), "--spec", str(spec))
    assert terminal.close() == 0
    screen = terminal.output.decode(errors="replace")
    assert "scoring 3/3 runs ▕████████████████████████▏ 100%" in screen, screen
    assert re.search(r"t1 +lookup +3/3 +1\.00", screen), screen
    piped = subprocess.run(
        [sys.executable, "-m", "collector.cli", "report", "--db", str(server.db), "--spec", str(spec)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert piped.returncode == 0 and piped.stderr == ""  # no progress when nobody watches


@pytest.mark.parametrize("value", ["text", "json"])
def test_log_format_and_level_come_from_the_environment_too(tmp_path: Path, value: str) -> None:
    server = ServeProcess(
        tmp_path / "t.duckdb", env={"TRACESCORE_LOG_FORMAT": value, "TRACESCORE_LOG_LEVEL": "warning"}
    ).start()
    assert server.stop() == 0
    assert server.log().strip() == ""  # warning and above only: a clean start and stop says nothing


# --- a shell with job control ------------------------------------------------------------------------


def _take_terminal() -> None:
    """In the child: a session of its own whose controlling terminal is the pty on stdin, as a login
    shell has (so the shell's job control, and tcgetpgrp, are real)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class JobShell:
    """`bash` with job control (`set -m`) on a pseudo-terminal that is its controlling terminal."""

    def __init__(self, script: str) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.process = subprocess.Popen(
            ["bash", "--norc", "--noprofile", "-c", "set -m\n" + script],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "TERM": "xterm-256color"},
            close_fds=True,
            preexec_fn=_take_terminal,  # noqa: PLW1509 (single-threaded here: setsid + TIOCSCTTY only)
        )
        os.close(slave)
        self.terminal = Terminal.__new__(Terminal)
        self.terminal.master, self.terminal.process, self.terminal.output = self.master, self.process, b""

    def read(self, until: str | None = None, timeout_s: float = 30.0) -> str:
        return self.terminal.read(until, timeout_s)

    def stop(self) -> None:
        """The shell exits once its job has; a test that failed first leaves none behind."""
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)

    def close(self) -> int:
        return self.terminal.close()


def _serve_command(tmp_path: Path, http: int) -> str:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    return (
        f"{sys.executable} -m collector.cli serve --db {tmp_path / 't.duckdb'} "
        f"--grpc 127.0.0.1:{free_port()} --http 127.0.0.1:{http} --grace-seconds 0.2 --specs {spec}"
    )


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash for job control")
def test_serve_in_the_background_never_draws_over_the_prompt(tmp_path: Path) -> None:
    """Issue #20: `tracescore serve … &` in the README's tour redrew its status line over the prompt.
    As a background job it keeps its log lines and draws no status line; in the foreground it draws."""
    http = free_port()
    shell = JobShell(f"{_serve_command(tmp_path, http)} &\necho background pid $!\nwait $!\necho exited $?")
    try:
        screen = shell.read(until="tracescore serving")
        pid = int(re.search(r"background pid (\d+)", screen)[1])  # type: ignore[index]
        assert os.getpgid(pid) != os.tcgetpgrp(shell.master)  # really a background job
        assert post_json(f"http://127.0.0.1:{http}/v1/traces", _agent_run())[0] == 200
        time.sleep(3)  # three ticks of the status line's refresh, and the verdict is scored
        os.kill(pid, signal.SIGTERM)
        screen = shell.read(until="exited ")
    finally:
        shell.stop()
        code = shell.close()
    screen = shell.terminal.output.decode(errors="replace")
    assert code == 0 and "exited 0" in screen, screen
    assert "tracescore serving" in screen  # its log lines still show
    assert "● serving" not in screen and "\r\x1b[2K" not in screen, screen
    assert re.search(r"t1 +lookup +1/1 +1\.00", screen), screen  # and its summary at the end


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash for job control")
def test_serve_in_the_foreground_of_a_job_control_shell_draws_its_status_line(tmp_path: Path) -> None:
    http = free_port()
    shell = JobShell(f"{_serve_command(tmp_path, http)}\necho exited $?")
    try:
        shell.read(until="tracescore serving")
        assert post_json(f"http://127.0.0.1:{http}/v1/traces", _agent_run())[0] == 200
        screen = shell.read(until="verdicts 1 pass · 0 fail")
        assert "● serving  spans 2" in screen, screen
        os.killpg(os.tcgetpgrp(shell.master), signal.SIGTERM)  # the foreground job, as Ctrl-C would
        screen = shell.read(until="exited ")
    finally:
        shell.stop()
        code = shell.close()
    assert code == 0 and "exited 0" in screen, screen

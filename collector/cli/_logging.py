"""How tracescore talks to a person at a terminal, and to a log pipeline everywhere else.

- stderr is a terminal (and `TERM` is not `dumb`): short readable log lines, and one status line that
  redraws in place: serve's live counters, or score/report's progress. Log lines never tear it: the
  handler clears the status line, writes the record, and draws the status line again. The status line
  is drawn only while the process is in the terminal's foreground process group: a background job
  (`serve … &`) keeps its log lines but never draws over the shell's prompt (`fg` brings it back).
- stderr is not a terminal (a pipe, a file, a container's log driver): one JSON object per line, with
  `time` (UTC, ISO 8601), `level`, `logger` and `message`, plus `exception` when there is one and any
  `extra=` fields. Python warnings and uncaught exceptions (main thread or any other) go the same way,
  so every line a collector reads parses.

`--log-format text|json` (or `TRACESCORE_LOG_FORMAT`) overrides the choice; `NO_COLOR` turns colours off.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import IO, Any

# Every attribute a LogRecord has of its own: anything else was passed with `extra=` and is kept.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}
_COLOURS = {"DEBUG": "\x1b[2m", "INFO": "\x1b[36m", "WARNING": "\x1b[33m", "ERROR": "\x1b[31m"}
_RESET, _CLEAR = "\x1b[0m", "\r\x1b[2K"
_HANDLER_MARK = "_tracescore_handler"


def is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM", "") != "dumb"
    except (AttributeError, ValueError):  # closed or not a real file
        return False


def _iso(created: float) -> str:
    moment = datetime.fromtimestamp(created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": _iso(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                data[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            data["error_type"] = record.exc_info[0].__name__
            data["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            data["stack"] = record.stack_info
        return json.dumps(data, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """`10:27:47 INFO  tracescore.serve: message`, the level coloured on a terminal."""

    def __init__(self, colour: bool) -> None:
        super().__init__()
        self._colour = colour

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        level = f"{record.levelname:<7}"
        if self._colour:
            level = _COLOURS.get(record.levelname, "\x1b[1;31m") + level + _RESET
        line = f"{stamp} {level} {record.name}: {record.getMessage()}"
        if record.exc_info and record.exc_info[0] is not None:
            line += "\n" + self.formatException(record.exc_info)
        return line


class StatusLine:
    """One line at the bottom of a terminal that redraws in place (progress, live counters)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.lock = threading.RLock()
        self._text = ""

    def show(self, text: str) -> None:
        with self.lock:
            self._text = text
            self._draw()

    def _draw(self) -> None:
        if not in_foreground(self.stream):
            return  # `serve … &`: a background job must not draw over the shell's prompt
        width = _columns(self.stream) - 1
        text = self._text if len(self._text) <= width else self._text[: max(width - 1, 0)] + "…"
        self.stream.write(_CLEAR + text)
        self.stream.flush()

    def hide(self) -> None:
        """Clear the line (until the next `show`)."""
        with self.lock:
            if self._text and in_foreground(self.stream):
                self.stream.write(_CLEAR)
                self.stream.flush()

    def redraw(self) -> None:
        with self.lock:
            if self._text:
                self._draw()

    def clear(self) -> None:
        with self.lock:
            self.hide()
            self._text = ""


def in_foreground(stream: IO[str]) -> bool:
    """Whether this process is in the foreground process group of the terminal `stream` writes to.

    A shell's background job (`tracescore serve … &`) shares the terminal with the prompt: its status
    line would be drawn over whatever the user types. A terminal that is not this process's controlling
    terminal has no job control for it (tcgetpgrp fails): nothing to collide with, so it counts as ours."""
    try:
        return os.tcgetpgrp(stream.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return True


def _columns(stream: IO[str]) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 100
    return columns if columns > 20 else 100  # a terminal that reports no size (0) is not 0 wide


class TerminalHandler(logging.StreamHandler[IO[str]]):
    """Writes records above the status line, which it then draws again."""

    def __init__(self, status: StatusLine) -> None:
        super().__init__(status.stream)
        self.status = status

    def emit(self, record: logging.LogRecord) -> None:
        with self.status.lock:
            self.status.hide()
            super().emit(record)
            self.status.redraw()


class _State:
    status: StatusLine | None = None
    json_mode = False
    hooks: tuple[Any, Any] | None = None  # sys/threading excepthooks from before JSON mode


def status_line() -> StatusLine | None:
    """The terminal's status line, when logging was set up for a terminal."""
    return _State.status


def json_logs() -> bool:
    """Whether logs are JSON lines (so an error a command reports should be one too)."""
    return _State.json_mode


def _log_uncaught(kind: str) -> Callable[..., None]:
    def hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        logging.getLogger("tracescore").critical(
            "uncaught exception%s: %s", kind, exc, exc_info=(exc_type, exc, tb)
        )

    return hook


def _thread_hook(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "?"
    logging.getLogger("tracescore").critical(
        "uncaught exception in thread %s: %s",
        name,
        args.exc_value,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )


class _StderrHandler(logging.StreamHandler[IO[str]]):
    """Writes to whatever `sys.stderr` is at the time of the record, not when it was set up (a caller
    that swaps stderr, as an in-process test does, never leaves records going to a closed stream)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, value: IO[str]) -> None:
        pass


def _install_hooks(on: bool) -> None:
    if on and _State.hooks is None:
        _State.hooks = (sys.excepthook, threading.excepthook)
        sys.excepthook = _log_uncaught("")
        threading.excepthook = _thread_hook
    elif not on and _State.hooks is not None:
        sys.excepthook, threading.excepthook = _State.hooks
        _State.hooks = None


def setup_logging(fmt: str = "auto", level: str = "info", stream: IO[str] | None = None) -> str:
    """Configure the root logger for `fmt` (auto, text or json); returns the format chosen.

    `stream` defaults to stderr (followed if it is replaced later)."""
    terminal = is_terminal(sys.stderr if stream is None else stream)
    chosen = ("text" if terminal else "json") if fmt == "auto" else fmt
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
    _State.status = (
        StatusLine(sys.stderr if stream is None else stream) if terminal and chosen == "text" else None
    )
    handler: logging.Handler
    if _State.status is not None:
        handler = TerminalHandler(_State.status)
    elif stream is None:
        handler = _StderrHandler()
    else:
        handler = logging.StreamHandler(stream)
    colour = terminal and not os.environ.get("NO_COLOR")
    handler.setFormatter(JsonFormatter() if chosen == "json" else TextFormatter(colour))
    _install_hooks(chosen == "json")
    setattr(handler, _HANDLER_MARK, True)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.captureWarnings(False)  # re-arm: whoever swapped warnings.showwarning since is undone
    logging.captureWarnings(True)
    _State.json_mode = chosen == "json"
    return chosen


class Progress:
    """`scoring 45/120 runs ▕████░░░░▏ 37%` on the status line; nothing off a terminal."""

    def __init__(self, label: str, total: int | None = None, unit: str = "runs") -> None:
        self._status = status_line()
        self._label, self._total, self._unit = label, total, unit
        self._done = 0
        self._last = 0.0

    def __enter__(self) -> Progress:
        self._render(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.clear()

    def advance(self, n: int = 1) -> None:
        self._done += n
        self._render()

    def set(self, done: int) -> None:
        self._done = done
        self._render()

    def _render(self, force: bool = False) -> None:
        if self._status is None:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1 and self._done != self._total:
            return
        self._last = now
        if self._total:
            share = min(self._done / self._total, 1.0)
            bar = "█" * round(share * 24) + "░" * (24 - round(share * 24))
            text = f"{self._label} {self._done}/{self._total} {self._unit} ▕{bar}▏ {share:.0%}"
        else:
            text = f"{self._label} … {self._done} {self._unit}" if self._done else f"{self._label} …"
        self._status.show(text)

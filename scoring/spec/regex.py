"""Regular expressions from specs and captured tool schemas, matched in time linear in the text.

Python's `re` backtracks: `(a+)+$` against 32 `a`s and a `!` takes minutes, cannot be interrupted, and
holds the GIL meanwhile, which in `serve` stalls the receivers too. RE2 never backtracks: a match costs
time proportional to the pattern times the text, whatever either holds, and releases the GIL. The
price is its syntax, which leaves out what only backtracking can do (lookaround, backreferences,
possessive and atomic groups); such a pattern is refused with a message that says what to write instead.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

MAX_PATTERN_CHARS = 1_000
# Per compiled pattern (program and DFA cache). Past it RE2 falls back to its NFA, still linear; a
# pattern whose program alone exceeds it is refused.
_MAX_MEM = 1 << 20

# Forms RE2 refuses (found in its error text, or in the pattern when RE2 cuts the form short), and what
# to write instead. First match wins.
_HINTS = (
    ("(?=", "lookahead (?=…) is not supported: match the text itself, or use a second rule"),
    ("(?!", "negative lookahead (?!…) is not supported: list the accepted forms with | instead"),
    ("(?<=", "lookbehind (?<=…) is not supported: match the text itself"),
    ("(?<!", "negative lookbehind (?<!…) is not supported: list the accepted forms with | instead"),
    ("(?>", "atomic groups (?>…) are not supported: write the group without ?>"),
    ("(?P=", "backreferences (?P=name) are not supported"),
    ("(?x", "the verbose flag (?x) is not supported: remove the spaces and comments"),
    ("\\Z", r"\Z is not supported: write \z (end of text)"),
    ("++", "possessive quantifiers (++, *+, ?+) are not supported: drop the second +"),
    ("*+", "possessive quantifiers (++, *+, ?+) are not supported: drop the +"),
    ("?+", "possessive quantifiers (++, *+, ?+) are not supported: drop the +"),
)


def _options() -> Any:
    options = re2.Options()
    options.max_mem = _MAX_MEM
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    options.never_capture = True  # only "does it match" is asked: the DFA alone answers that
    return options


_OPTIONS = _options()


def _explain(pattern: str, error: str) -> str:
    if error.startswith(("invalid perl operator", "invalid escape sequence", "bad repetition operator")):
        for marker, hint in _HINTS:
            # RE2 quotes the offending text, cut short for (?P=name): look for the whole form in the pattern.
            if marker in error or (error.startswith("invalid perl operator") and marker in pattern):
                return hint
    if "invalid escape sequence: \\" in error and error.rstrip()[-1:].isdigit():
        return "backreferences (\\1, \\2, …) are not supported"
    if "pattern too large" in error:
        return "it compiles to a program too large to run in bounded memory: simplify it"
    what, _, where = error.partition(": ")  # RE2's form: "missing ): (a"
    said = f"{what} at {where!r}" if where else what
    if what == "invalid repetition size":
        return f"{said}: at most 1000, nested repetitions multiplied"
    return said


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> tuple[Any, str | None]:
    if len(pattern) > MAX_PATTERN_CHARS:
        return None, f"it has {len(pattern)} characters (at most {MAX_PATTERN_CHARS}): shorten it"
    try:
        return re2.compile(pattern, _OPTIONS), None
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
        return None, _explain(pattern, text)


def pattern_problem(pattern: str) -> str | None:
    """Why this pattern cannot be matched in linear time, or None. The message ends in the fix."""
    return _compile(pattern)[1]


class PatternError(ValueError):
    """A pattern met at match time (a schema captured in a trace) that RE2 cannot run."""


def _compiled(pattern: str) -> Any:
    regexp, problem = _compile(pattern)
    if problem is not None:
        raise PatternError(f"regex {pattern!r} cannot be matched in linear time (RE2): {problem}")
    return regexp


def _utf8(text: str) -> bytes:
    # JSON may carry lone surrogates ("\ud800"), which strict UTF-8 cannot encode; they match nothing.
    return text.encode("utf-8", "surrogatepass")


def fullmatch(pattern: str, text: str) -> bool:
    """Does the whole text match? Raises PatternError for a pattern `pattern_problem` refuses."""
    return _compiled(pattern).fullmatch(_utf8(text)) is not None


def search(pattern: str, text: str) -> bool:
    """Does the pattern match anywhere in the text (JSON Schema's `pattern`)?"""
    return _compiled(pattern).search(_utf8(text)) is not None

"""The user-facing error type, and the two states a revision can be in besides "runs".

A `HarnessError` carries one actionable sentence: what was wrong, where, and
the fix. The CLI catches it once and exits 2 (4 for `CannotTell`: nothing was
wrong with the input, but harness cannot look); anything else is a bug.
`Absent` and `Unevaluable` are not user errors: they become a revision's
outcome ("no such function there", "syntax error at line 12"). A line that
only informs (the result means the same without it) goes through `inform`,
which --quiet silences for the run (`quieted`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_QUIET: ContextVar[bool] = ContextVar("harness_quiet", default=False)  # set by `quieted`


def inform(message: str) -> None:
    """One line on stderr that informs without changing what a result means (a damaged
    cache file replaced); nothing inside `quieted(True)`. A warning that changes the
    meaning of a result is printed, never informed."""
    if not _QUIET.get():
        print(message, file=sys.stderr)


@contextmanager
def quieted(quiet: bool) -> Iterator[None]:
    """`inform` says nothing inside, when `quiet` (one run's --quiet)."""
    token = _QUIET.set(quiet)
    try:
        yield
    finally:
        _QUIET.reset(token)


class HarnessError(Exception):
    """A user error (bad input, missing revision, bad matrix file)."""


class CannotTell(HarnessError):
    """Not a user error: harness cannot look where it must (exit 4, one line saying why)."""


class Absent(Exception):
    """The target file or function does not exist at this revision."""


class Unevaluable(Exception):
    """The closure cannot be evaluated (syntax error, unbound name); the message says why.

    `missing` names the matrix input (an axis or field) whose absence is the reason,
    when declaring it is all it takes."""

    def __init__(self, reason: str, missing: str | None = None) -> None:
        super().__init__(reason)
        self.missing = missing


def first_line(exc: BaseException, width: int = 200) -> str:
    """An exception's message for a one-line error: its first line, bounded; else its type."""
    text = str(exc).strip()
    return text.splitlines()[0][:width] if text else type(exc).__name__

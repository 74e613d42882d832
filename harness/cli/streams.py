"""The standard streams of a harness process, made safe to write before a command runs.

A report is written whatever state the streams are in, or fails as one line:
- a closed standard output (`harness diff ... >&-`) becomes `ClosedOutput`, whose
  writes raise `OutputClosed` (the CLI says so in one line, exit 2); a closed
  standard error becomes a sink; either descriptor is then held by /dev/null, so no
  file harness opens later (and no child it starts) takes descriptor 1 or 2 for its
  own;
- an encoding that cannot spell a character (`PYTHONIOENCODING=ascii`, `LANG=C`)
  writes it escaped (`\\xe8`, backslashreplace), as do lone surrogates (a path
  that is not UTF-8): the report is written, never a UnicodeEncodeError.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys


class OutputClosed(OSError):
    """A write to a standard output that was closed before harness started."""

    def __init__(self) -> None:
        super().__init__(errno.EBADF, "standard output is closed")


class ClosedOutput(io.TextIOBase):
    """Stands for a closed standard output: every write raises `OutputClosed`. Its
    descriptor is 1 (held by /dev/null), so that `--output FORMAT=/dev/stdout` is known
    for standard output, and refused as it is, rather than written to /dev/null."""

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1

    def write(self, text: str) -> int:
        raise OutputClosed()


def settle() -> None:
    """Make the process's standard output and error safe to write (see the module)."""
    if sys.stdout is None:  # Python found descriptor 1 closed
        _hold(1)
        sys.stdout = ClosedOutput()
    if sys.stderr is None:
        _hold(2)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):  # not a TextIOWrapper
            stream.reconfigure(errors="backslashreplace")


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _hold(fd: int) -> None:
    """Put /dev/null on descriptor `fd`, unless something already holds it."""
    if _is_open(fd):
        return
    null = os.open(os.devnull, os.O_RDWR)
    if null != fd:
        os.dup2(null, fd)
        os.close(null)

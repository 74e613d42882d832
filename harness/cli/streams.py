"""The standard streams of a harness process, made safe to write before a command runs.

A report is written whatever state the streams are in, or fails as one line:
- a closed standard output (`harness diff ... >&-`) becomes `ClosedOutput`, whose
  writes raise `OutputClosed` (the CLI says so in one line, exit 2); a closed
  standard error becomes a sink; either descriptor is then held by /dev/null, so no
  file harness opens later (and no child it starts) takes descriptor 1 or 2 for its
  own;
- an encoding that cannot spell a character (`PYTHONIOENCODING=ascii`, `LANG=C`)
  writes it escaped (`\\xe8`, backslashreplace), as do lone surrogates (a path
  that is not UTF-8): the report is written, never a UnicodeEncodeError;
- nothing written starts a GitHub Actions workflow command (`Inert`): a value from
  the analysed repository printed in a report (`16\\n::error::...`) is text in the
  job's log, not an annotation, a mask or an output. The workflow commands harness
  composes itself (`--format github`) are written with `commands`.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterable, Iterator

from harness.report.escape import inert_output

# What a terminal would act on: C0 and C1 controls but tab and line feed (and, on
# standard error, carriage return, which draws the progress line), and the Unicode line
# and paragraph separators, shown as `\\xNN` / `\\uNNNN` on standard output.
STDOUT_ESCAPED = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029"
STDERR_ESCAPED = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029"


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
    sys.stdout = Inert(sys.stdout, STDOUT_ESCAPED)
    sys.stderr = Inert(sys.stderr, STDERR_ESCAPED)


class Inert(io.TextIOBase):
    """A text stream written through to `stream` with no workflow command in what is
    written (`harness.report.escape.inert_output`), whatever way the text is cut into
    writes; `commands` writes harness's own commands as they are."""

    def __init__(self, stream, escaped: str) -> None:
        self.stream, self.escaped, self.end = stream, escaped, "\n"

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding

    def write(self, text: str) -> int:
        self.stream.write(self._remember(inert_output(text, self.end, self.escaped)))
        return len(text)

    def commands(self, text: str) -> None:
        """Write `text`, workflow commands harness composed (each value escaped), as is."""
        self.stream.write(self._remember(text))

    def flush(self) -> None:
        self.stream.flush()

    def _remember(self, text: str) -> str:
        self.end = text[-64:] if len(text) >= 64 else (self.end + text)[-64:]
        return text


def inert_text(text: str | Iterable[str]) -> Iterator[str]:
    """`text` (or its pieces, in turn) as standard output shows it (see `Inert`)."""
    sink = io.StringIO()
    stream = Inert(sink, STDOUT_ESCAPED)
    for piece in [text] if isinstance(text, str) else text:
        stream.write(piece)
        yield sink.getvalue()
        sink.seek(0)
        sink.truncate()


def write_commands(stream, text: str) -> None:
    """Write harness's own workflow commands to `stream` (standard output or error, made
    `Inert` by `settle`; any other stream as it is)."""
    (stream.commands if isinstance(stream, Inert) else stream.write)(text)


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

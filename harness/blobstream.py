"""Blobs a scan will read, streamed ahead of it by one `git cat-file --batch`.

A history reads the target file at every commit that changes it; asked one
at a time, each blob costs a round trip to git while nothing else runs.
Given the blob ids in the order the scan will ask for them (`git log --raw`
told them), one git process inflates them into a pipe while the scan parses
and evaluates earlier commits, and the scan reads each off the pipe when it
gets there: no thread, and git is never more than the pipe's size ahead.

A blob asked for out of order, or one git cannot give, is `None`, and the
caller reads it the ordinary way (`harness.gitio`), which also reports a
corrupt object properly. Git is given object ids, never a path or an option
from the repository.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterable

PIPE_SIZE = 1 << 20  # how far git may run ahead, in bytes (Linux's default ceiling)
F_SETPIPE_SZ = 1031  # Linux's fcntl command (Python names it only from 3.10 on Linux)


class BlobStream:
    """`take(blob)`: the blob's bytes when it is the next one planned, or a later one
    (those between are skipped); else None. Close it (or use it as a context manager)
    when the scan ends."""

    def __init__(self, git_dir: str, blobs: Iterable[str]) -> None:
        self.order = list(blobs)
        self.next = 0  # the position of the next answer on the pipe
        self.process = _cat_file(git_dir, self.order)
        self.broken = False

    def __enter__(self) -> BlobStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
            self.process.wait()
            self.process.stdout.close()

    def take(self, blob: str) -> bytes | None:
        position = self._position(blob)
        if position is None:
            return None
        try:
            while self.next < position:
                self._read()
            return self._read()
        except (OSError, ValueError):
            self.broken = True
            return None

    def _position(self, blob: str) -> int | None:
        """Where `blob` is next planned, at most a few places ahead (None: nowhere near)."""
        if self.broken:
            return None
        ahead = self.order[self.next : self.next + LOOK]
        return self.next + ahead.index(blob) if blob in ahead else None

    def _read(self) -> bytes | None:
        self.next += 1
        return _next_object(self.process.stdout)


LOOK = 16  # how far ahead a blob asked for may be planned: further means the plan is off


def _cat_file(git_dir: str, blobs: list[str]) -> subprocess.Popen:
    with tempfile.TemporaryFile() as ids:  # stdin from a file: no pipe to fill both ways
        ids.write("".join(f"{blob}\n" for blob in blobs).encode())
        ids.seek(0)
        process = subprocess.Popen(
            ["git", "--git-dir", git_dir, "cat-file", "--batch"],
            stdin=ids,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    if sys.platform.startswith("linux"):
        import fcntl  # POSIX only

        with contextlib.suppress(OSError):  # a smaller pipe only means less reading ahead
            fcntl.fcntl(process.stdout.fileno(), F_SETPIPE_SZ, PIPE_SIZE)
    return process


def _next_object(out) -> bytes | None:
    """The next answer of `git cat-file --batch`: a blob's bytes, or None (missing, or not
    a blob). Raises ValueError when the stream ends or is not what git writes."""
    header = out.readline()
    if not header.endswith(b"\n"):
        raise ValueError("the stream ended")
    fields = header.split()
    if len(fields) != 3 or not fields[2].isdigit():
        return None  # `<id> missing`: no body follows
    size = int(fields[2])
    body = out.read(size + 1)
    if len(body) != size + 1:
        raise ValueError("the stream ended inside an object")
    return body[:size] if fields[1] == b"blob" else None

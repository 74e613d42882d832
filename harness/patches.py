"""git's patches for a scan's commits, and the lines they change.

A history needs each commit's file only as a layout (`harness.closure.pieces`),
and a commit changes a few lines of an 80 KB file. Reading every blob through
a pipe, decoding it and comparing it with the last one to find those lines
was most of a scan's cost. Instead a second git process prints `git log -p
-U0` for the same commits, in scan order, and each commit's layout is its
parent's with the hunks applied to the pieces around them.

A patch is applied only when it is certainly right: git printed a text patch
between two blobs (`index OLD..NEW`), the layout at hand is OLD's, every line
the patch removes is the line OLD has there, the hunks leave lines 1 and 2
alone, and OLD declares no encoding there (so both texts are plain UTF-8, as
`harness.gitio.python_source` would decode them). Anything else (a new file,
a binary one, a merge, a blob asked for out of order, a stream that stops
making sense) gives None, and the caller reads the blob the ordinary way.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import BinaryIO

from harness.gitcmd import start_reading

HEADER = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_NEWLINE = b"\\"  # "\ No newline at end of file": the line before it has no newline
LOOK = 16  # commits read ahead looking for the patch asked for


@dataclass(frozen=True)
class Hunk:
    before: int  # unchanged lines before the change (old and new agree up to there)
    removed: bytes  # the old lines replaced, newlines included
    added: bytes  # the new lines


@dataclass(frozen=True)
class FilePatch:
    old: str
    new: str
    hunks: tuple[Hunk, ...] | None  # None: not a text patch harness applies


class PatchStream:
    """git's patches for a scan's commits, read as the scan gets to them.

    `patch(new, old)`: the patch that makes blob `new` from blob `old`, when it is
    among the next few git printed (else None). Close it when the scan ends.
    """

    def __init__(
        self, git_dir: str, cwd: str, shas: list[str], paths: list[str], walk: list[str] = ()
    ) -> None:
        """The patches of `shas`, in that order; or, with `walk` (git log's options and
        revisions: a scan's listing), of the commits git walks, never all held here."""
        which = [*walk, "--"] if walk else ["--stdin", "--no-walk=unsorted", "--"]
        args = ["log", "-p", "-U0", "--inter-hunk-context=0", "--full-index", "--no-renames",
                "--no-color", "--no-ext-diff", "--no-textconv", "--format=%x01%H", *which,
                *paths]  # fmt: skip
        self.process = start_reading(git_dir, args, [] if walk else shas, cwd)
        self.records = Records(self.process.stdout)
        self.ready: dict[str, list[FilePatch]] = {}  # read ahead, by the blob they make
        self.broken = False

    def __enter__(self) -> PatchStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
            self.process.wait()
            self.process.stdout.close()

    def patch(self, new: str, old: str) -> FilePatch | None:
        for _ in range(LOOK + 1):  # what was read ahead, then a few more commits
            found = next((p for p in self.ready.get(new, ()) if p.old == old), None)
            if found is not None or self.broken:
                return found if found is not None and found.hunks else None
            self._read_commit()
        return None

    def _read_commit(self) -> None:
        """The next commit's patches, kept by the blob each makes (the stream is broken
        at its end, or when it stops making sense: nothing more is read then)."""
        try:
            record = self.records.next()
            found = [] if record is None else file_patches(record)
        except (OSError, ValueError):
            record = None
        if record is None:
            self.broken = True
            return
        for patch in found:
            if patch.new not in self.ready and len(self.ready) >= 4 * LOOK:
                del self.ready[next(iter(self.ready))]
            same = self.ready.setdefault(patch.new, [])
            if patch not in same:
                same[:] = [*same[-3:], patch]  # a few: a file reverted and redone


class Records:
    """The stream's commits, one record (its bytes from the \\x01 that starts it) at a time,
    read in large blocks."""

    def __init__(self, out: BinaryIO) -> None:
        self.out, self.buffer, self.at, self.ended = out, b"", 0, False

    def next(self) -> bytes | None:
        while True:
            cut = self.buffer.find(b"\n\x01", self.at)
            if cut >= 0 or self.ended:
                end = cut + 1 if cut >= 0 else len(self.buffer)
                record, self.at = self.buffer[self.at : end], end
                return record or None
            chunk = self.out.read1(BLOCK)
            self.buffer, self.at = self.buffer[self.at :] + chunk, 0
            self.ended = not chunk


BLOCK = 1 << 16


def file_patches(record: bytes) -> list[FilePatch]:
    """The patches of one commit's record. Raises ValueError when a hunk is not what its
    header counts."""
    lines, found, at = record.split(b"\n"), [], 0
    while at < len(lines):
        at += 1
        if not lines[at - 1].startswith(b"diff "):
            continue
        patch, at = _file_patch(lines, at)
        found.append(patch)
    return found


def _file_patch(lines: list[bytes], at: int) -> tuple[FilePatch, int]:
    old = new = "0"
    hunks: list[Hunk] | None = []
    while at < len(lines) and not lines[at].startswith(b"diff "):
        line, at = lines[at], at + 1
        if line.startswith(b"@@ "):
            hunk, at = _hunk(lines, at, line)
            if hunks is not None:
                hunks.append(hunk)
        elif line.startswith(b"index "):
            ids = line.split()[1].split(b"..")
            if len(ids) == 2 and b"," not in ids[0]:  # not a merge's combined diff
                old, new = ids[0].decode("ascii"), ids[1].decode("ascii")
        elif line.startswith((b"Binary files ", b"GIT binary patch")):
            hunks = None
    usable = hunks is not None and old.strip("0") != "" and new.strip("0") != ""
    return FilePatch(old, new, tuple(hunks) if usable else None), at


def _hunk(lines: list[bytes], at: int, header: bytes) -> tuple[Hunk, int]:
    match = HEADER.match(header)
    if match is None:
        raise ValueError(f"not a hunk header: {header[:80]!r}")
    start, count = int(match[1]), 1 if match[2] is None else int(match[2])
    removed, at = _body(lines, at, b"-", count)
    added, at = _body(lines, at, b"+", 1 if match[4] is None else int(match[4]))
    return Hunk(start - 1 if count else start, removed, added), at


def _body(lines: list[bytes], at: int, sign: bytes, count: int) -> tuple[bytes, int]:
    """`count` lines starting with `sign`, without it, each with its newline but the last
    when git's "\\ No newline" mark follows it; and where the lines after them start."""
    body = lines[at : at + count]
    if len(body) < count or not all(line.startswith(sign) for line in body):
        raise ValueError(f"a hunk has fewer {sign!r} lines than its header counts")
    at += count
    text = b"".join(line[1:] + b"\n" for line in body)
    if at < len(lines) and lines[at].startswith(NO_NEWLINE):
        if not body:
            raise ValueError("a no-newline mark after no line")
        text, at = text[:-1], at + 1
    return text, at


def encoding_kept(head: str, hunks: tuple[Hunk, ...]) -> bool:
    """Whether the hunks leave lines 1 and 2 alone and the text (`head`: at least its first
    two lines) declares no encoding there: both texts are then plain UTF-8."""
    return bool(hunks) and hunks[0].before >= 2 and "coding" not in _first_two_lines(head)


def _first_two_lines(text: str) -> str:
    first = text.find("\n")
    second = text.find("\n", first + 1) if first >= 0 else -1
    return text if second < 0 else text[:second]


def lines_in(data: bytes) -> int:
    """How many lines `data` holds (its last may lack a newline)."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def splice(text: str, hunks: tuple[Hunk, ...], first_line: int = 0) -> str | None:
    """`text` (the file's lines from line `first_line` on, 0-based) with the hunks applied,
    or None when they do not fit it: a line they remove is not there, or a line other
    than the file's last would end without a newline. The caller checks
    `encoding_kept` for the whole file."""
    out, at, line = [], 0, first_line  # `at`: where line `line` starts in `text`
    for hunk in hunks:
        try:
            removed, added = hunk.removed.decode(), hunk.added.decode()
        except UnicodeDecodeError:
            return None
        start = _forward(text, at, hunk.before - line)
        if start is None or not text.startswith(removed, start):
            return None
        end = start + len(removed)
        whole = not removed or removed.endswith("\n") or end == len(text)
        if not whole or (added and not added.endswith("\n") and end != len(text)):
            return None
        out += (text[at:start], added)
        at, line = end, hunk.before + lines_in(hunk.removed)
    out.append(text[at:])
    return "".join(out)


def _forward(text: str, position: int, lines: int) -> int | None:
    """Where the line `lines` lines after the one starting at `position` starts (None:
    the text has fewer, or `lines` is negative: hunks out of order)."""
    if lines < 0:
        return None
    for _ in range(lines):
        found = text.find("\n", position)
        if found < 0:
            return None
        position = found + 1
    return position

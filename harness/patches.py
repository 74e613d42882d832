"""A scan's texts, made from the text before them and the lines git says changed.

A history reads the target file at each commit that changes it: 80 KB a
time, of which a commit changes a few lines. Copying every blob through a
pipe, decoding it and comparing it with the last one to find those lines
was most of a scan's cost. Instead a second git process prints `git log -p
-U0` for the same commits, in scan order, and a commit's text is its
parent's with the hunks applied; where the edit lies is told to
`harness.spans`, so nothing compares the two texts.

A patch is used only when it is certainly right: git printed a text patch
between two blobs (`index OLD..NEW`), the text of OLD is at hand, every line
the patch removes is the line OLD has there, the hunks leave lines 1 and 2
alone, and OLD declares no encoding there (so both texts are plain UTF-8,
as `harness.gitio.python_source` would decode them). Anything else (a new
file, a binary one, a merge, a blob asked for out of order, a stream that
stops making sense) gives None, and the caller reads the blob the ordinary
way.
"""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from harness import spans
from harness.gitcmd import start_reading

HEADER = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_NEWLINE = b"\\"  # "\ No newline at end of file": the line before it has no newline
LOOK = 16  # commits read ahead looking for the patch asked for
KEPT = 8  # texts made, kept as the bases of the next patches
MARK_EVERY = 32  # lines between the known line starts a walk leaves behind


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
    among the next few git printed (else None). `text(blob, known)`: the blob's text,
    made by patching an earlier text, either one this stream made or one `known(blob)`
    gives; else None. Close it when the scan ends.
    """

    def __init__(self, git_dir: str, cwd: str, shas: list[str], paths: list[str]) -> None:
        args = ["log", "--stdin", "--no-walk=unsorted", "-p", "-U0", "--full-index",
                "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv",
                "--format=%x01%H", "--", *paths]  # fmt: skip
        self.process = start_reading(git_dir, args, shas, cwd)
        self.records = Records(self.process.stdout)
        self.ready: dict[str, list[FilePatch]] = {}  # read ahead, by the blob they make
        self.texts: dict[str, tuple[str, list[tuple[int, int]]]] = {}  # blob -> text, marks
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
        return next((p for p in self._patches(new) if p.old == old and p.hunks), None)

    def text(self, blob: str, known: Callable[[str], str | None]) -> str | None:
        for patch in self._patches(blob):
            base = self.texts.get(patch.old)
            if base is None:
                old = known(patch.old)
                base = None if old is None else (old, [(0, 0)])
            made = None if base is None or not patch.hunks else apply(*base, patch.hunks)
            if made is not None:
                text, marks, lo, old_hi = made
                spans.tell(base[0], text, lo, old_hi)
                if len(self.texts) >= KEPT:
                    del self.texts[next(iter(self.texts))]
                self.texts[blob] = (text, marks)
                return text
        return None

    def _patches(self, blob: str) -> list[FilePatch]:
        """The patches read so far that make `blob`, reading a few more commits if none."""
        for _ in range(LOOK):
            if blob in self.ready or self.broken:
                break
            try:
                record = self.records.next()
                found = [] if record is None else file_patches(record)
            except (OSError, ValueError):
                record, self.broken = None, True
            if record is None:
                self.broken = True  # the end, or nonsense: nothing more is read
                break
            for patch in found:
                if patch.new not in self.ready and len(self.ready) >= 4 * LOOK:
                    del self.ready[next(iter(self.ready))]
                same = self.ready.setdefault(patch.new, [])
                if patch not in same:
                    same[:] = [*same[-3:], patch]  # a few: a file reverted and redone
        return self.ready.get(blob, [])


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


def apply(
    text: str, marks: list[tuple[int, int]], hunks: tuple[Hunk, ...]
) -> tuple[str, list[tuple[int, int]], int, int] | None:
    """(the new text, its marks, where the edit starts, where it ends in `text`), or None
    when the hunks do not fit `text` or touch what decides its encoding."""
    if not encoding_kept(text, hunks):
        return None
    marks = list(marks)
    made = _splice(text, marks, hunks, 0)
    if made is None:
        return None
    new, lo, at, lines_shift = made
    first, last = hunks[0], hunks[-1]
    old_end_line = last.before + lines_in(last.removed)
    kept = [m for m in marks if m[0] <= first.before]
    shift = len(new) - len(text)
    later = [(line + lines_shift, char + shift) for line, char in marks if line > old_end_line]
    return new, kept + later, lo, at


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
    """`text` (the file's lines from `first_line` on, 0-based) with the hunks applied, or
    None when they do not fit it. The caller checks `encoding_kept` for the whole file."""
    made = _splice(text, [(0, 0)], hunks, first_line)
    return None if made is None else made[0]


def _splice(text, marks, hunks, first_line) -> tuple[str, int, int, int] | None:
    """(new text, where the edit starts, where it ends in `text`, lines gained)."""
    out, at, lines_shift, lo = [], 0, 0, None
    for hunk in hunks:
        try:
            removed, added = hunk.removed.decode(), hunk.added.decode()
        except UnicodeDecodeError:
            return None
        start = line_start(text, marks, hunk.before - first_line)
        if start is None or start < at or not text.startswith(removed, start):
            return None
        lo = start if lo is None else lo
        end = start + len(removed)
        whole = not removed or removed.endswith("\n") or end == len(text)
        if not whole or (added and not added.endswith("\n") and end != len(text)):
            return None  # only the file's last line may end without a newline
        out += (text[at:start], added)
        at = end
        lines_shift += added.count("\n") - removed.count("\n")
    out.append(text[at:])
    return "".join(out), lo, at, lines_shift


def line_start(text: str, marks: list[tuple[int, int]], line: int) -> int | None:
    """Where the line after `line` complete lines starts (None: the text has fewer); the
    walk from the nearest known start leaves marks behind for the next call."""
    if line < 0:
        return None
    index = bisect.bisect_right(marks, (line, len(text) + 1)) - 1
    known, position = marks[index]
    walked = []
    for count in range(known + 1, line + 1):
        found = text.find("\n", position)
        if found < 0:
            return None
        position = found + 1
        if (count - known) % MARK_EVERY == 0:
            walked.append((count, position))
    if walked:
        marks[index + 1 : index + 1] = walked
    return position

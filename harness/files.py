"""Writing files: whole or not at all, and to where the user pointed.

`write_atomically` writes a temporary file beside the target, then renames it
over: a reader never sees half a file, and a write that fails (a full disk)
leaves the old file as it was. `write_output` is what `--output` and
`snapshot -o` use: a regular file (new, or reached through symlinks) is written
that way, keeping an existing file's mode; anything else (`-`, a FIFO, a device
node, a terminal, `/dev/stdout`) is written in place, since renaming over it
would replace it with a regular file.

A Python file harness parses (the target, and every file its closure draws on)
is at most MAX_SOURCE_CHARS characters (`check_source_size`): a pull request can
bloat a file, and parsing is the parent's work, outside the worker's limits.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from harness.errors import Unevaluable

# 3.7x SGLang's largest file (scheduler.py, 282 KB in 0.5.23), 13x overrides.py (76 KB);
# CPython parses about 1 MB a second into some 100 MB of tree. Characters, not bytes: a
# patched file's size is known from its pieces' texts without encoding them.
MAX_SOURCE_CHARS = 1 << 20

TEMPORARY = ".tmp-"  # temporary files are named `.NAME.tmp-XXXXXXXX` (see `temporaries`)


def write_atomically(
    path: Path,
    data: bytes | Iterable[bytes],
    mode: int | None = None,
    kept: os.stat_result | None = None,
) -> None:
    """Replace `path` with `data` (bytes, or pieces written as they come) in one rename; on
    any failure `path` is untouched. `mode`: the new file's permissions (None: readable by
    its owner only); `kept`: the file it replaces, whose mode (and owner, where this
    process may give it) it keeps."""
    made: list[Path] = []  # the temporary file, named before it exists: an interrupt
    try:  # (Ctrl-C, SIGTERM) at any point finds it here, and removes it
        temporary = _create_beside(path, made)
        fd = os.open(temporary, os.O_WRONLY)
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o600 if mode is None else mode)
            if kept is not None:
                _keep(out.fileno(), kept)
            _write_pieces(out, data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        for temporary in made:
            temporary.unlink(missing_ok=True)
        raise


def _create_beside(path: Path, made: list[Path]) -> Path:
    """A new empty file next to `path`, named so that `temporaries` finds it; `made` holds
    its name from before it is created (a name some other process took is let go)."""
    import secrets  # here: a run that writes nothing need not load it

    for _ in range(100):
        candidate = path.parent / f".{path.name}{TEMPORARY}{secrets.token_hex(4)}"
        made.append(candidate)
        try:
            os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            made.remove(candidate)
            continue
        return candidate
    raise FileExistsError(f"no free temporary name beside {path}")


def temporaries(directory: Path, older_than: float, now: float) -> list[Path]:
    """The temporary files `write_atomically` left in `directory` (a process killed
    mid-write) last modified more than `older_than` seconds before `now`."""
    found = []
    for entry in os.scandir(directory):
        if entry.name.startswith(".") and TEMPORARY in entry.name:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and now - info.st_mtime > older_than:
                found.append(Path(entry.path))
    return found


def write_output(path: str, text: str | Iterable[str], commands: bool = False) -> None:
    """Write `text` (UTF-8, a lone surrogate as `\\udXXX`; or pieces of it, written as
    they come and never joined: a large JSON report) where `path` points: `-` or the
    file standard output already is (`/dev/stdout`): standard output (likewise
    standard error); a regular file, or a new one: atomically, through any symlinks
    (the link stays, its target is written), keeping an existing file's mode; anything
    else (a FIFO, a device node): opened and written in place. `commands`: the text is
    workflow commands harness composed, written to a standard stream as they are
    (`harness.cli.streams.Inert.commands`). Raises OSError."""
    pieces = [text] if isinstance(text, str) else text
    stream = sys.stdout if path == "-" else _standard_stream(path)
    if stream is not None:
        write = getattr(stream, "commands", stream.write) if commands else stream.write
        for piece in pieces:
            write(piece)
        stream.flush()
        return
    data = (piece.encode("utf-8", "backslashreplace") for piece in pieces)  # lone surrogates
    target = Path(os.path.realpath(path))
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    if info is not None and not (stat.S_ISREG(info.st_mode) and _same(target, info)):
        _write_in_place(path, data)  # also a regular file with no name (`/proc/PID/fd/N`)
    elif info is None:
        write_atomically(target, data, 0o666 & ~_umask())
    else:
        write_atomically(target, data, kept=info)


def _standard_stream(path: str):
    """Standard output or error when `path` is (through links: `/dev/stdout`) the very
    file it writes to, else None: written through the stream, after what it wrote."""
    try:
        there = os.stat(path)
    except (OSError, ValueError):
        return None
    for stream in (sys.stdout, sys.stderr):
        try:
            out = os.fstat(stream.fileno())
        except (OSError, ValueError, AttributeError):  # a stream with no descriptor
            continue
        if (there.st_dev, there.st_ino) == (out.st_dev, out.st_ino):
            return stream
    return None


def _same(path: Path, info: os.stat_result) -> bool:
    """Whether `path` names the file `info` describes."""
    try:
        found = os.stat(path)
    except OSError:
        return False
    return (found.st_dev, found.st_ino) == (info.st_dev, info.st_ino)


def _write_in_place(path: str, data: bytes | Iterable[bytes]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)  # a FIFO waits here for its reader
    with os.fdopen(fd, "wb") as out:
        _write_pieces(out, data)


def _write_pieces(out, data: bytes | Iterable[bytes]) -> None:
    for piece in [data] if isinstance(data, bytes) else data:
        out.write(piece)


def _keep(fd: int, info: os.stat_result) -> None:
    """The replaced file's owner and group (when this process may give them: root), then
    its mode (after: a change of owner may clear set-id bits)."""
    if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(OSError):  # not ours to give: the writer's, like a new file
            os.fchown(fd, info.st_uid, info.st_gid)
    os.fchmod(fd, stat.S_IMODE(info.st_mode))


def _umask() -> int:
    """The process's umask, read without changing it (Linux), else set and restored."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def undecodable(data: bytes, exc: UnicodeDecodeError) -> tuple[int, str]:
    """Where text that failed to decode went wrong: its line, and the byte (as 0xNN)."""
    return data[: exc.start].count(b"\n") + 1, f"0x{data[exc.start]:02x}"


def check_source_size(path: str, text: str, limit: int = MAX_SOURCE_CHARS) -> None:
    """Raise Unevaluable (one line: the file, its size, the cap) when `text` is longer
    than `limit` characters."""
    if len(text) > limit:
        raise Unevaluable(
            f"{path} is {len(text):,} characters, over the {limit:,}-character cap on a "
            "file harness parses (docs/security.md, Bounds)"
        )

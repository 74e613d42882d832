"""Writing a file whole or not at all: a temporary file beside it, then a rename.

A reader never sees half a file, and a write that fails (a full disk) leaves
the old file as it was.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one rename; on any failure `path` is untouched."""
    import tempfile  # here: a run that writes nothing (a diff read back) need not load it

    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def undecodable(data: bytes, exc: UnicodeDecodeError) -> tuple[int, str]:
    """Where text that failed to decode went wrong: its line, and the byte (as 0xNN)."""
    return data[: exc.start].count(b"\n") + 1, f"0x{data[exc.start]:02x}"

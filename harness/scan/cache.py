"""Outcome tables on disk, keyed by what they are a function of.

A table depends only on the extracted closure (its digest), the matrix file
and the world, plus harness's own code; the key hashes all four, so a stale
entry cannot be found. Each file carries a checksum of its payload and the
key it was written for, and unpickling admits no classes: a damaged or
foreign file is detected, reported once, and the run carries on uncached.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys
import zlib
from array import array
from functools import cache
from pathlib import Path

from harness.engine.outcome import CODE_TYPE, Outcome, OutcomeTable
from harness.files import write_atomically

MAGIC = b"harness-outcomes-1\n"
PLAIN = (type(None), bool, int, float, complex, str, bytes)


@cache
def engine_digest() -> str:
    """A hash of harness's own source: any change to how outcomes are made is a new key."""
    root = Path(__file__).parent.parent  # the harness package
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


EXPLORED, EVERY_CELL = "explored", "every-cell"  # how a table was made: part of its key


def table_key(world: str, matrix_digest: str, closure_digest: str, mode: str) -> str:
    text = "\0".join((engine_digest(), world, matrix_digest, closure_digest, mode))
    return hashlib.sha256(text.encode()).hexdigest()


def default_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "harness"


class TableCache:
    """Get and put outcome tables by key; `directory=None` caches nothing."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.hits = self.writes = 0

    def get(self, key: str, size: int) -> OutcomeTable | None:
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None  # a miss; a directory that cannot exist fails at the first write
        except OSError as exc:
            return self._give_up(f"cannot read {path} ({exc.strerror})")
        table = _decode(data, key, size)
        if table is None:  # evaluated again, and written over
            print(f"harness: warning: {path} is damaged; it will be replaced", file=sys.stderr)
            return None
        self.hits += 1
        return table

    def put(self, key: str, table: OutcomeTable) -> None:
        if self.directory is None or not _storable(table):
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, _encode(key, table))
        except OSError as exc:
            self._give_up(f"cannot write {path.parent} ({exc.strerror or exc})")
            return
        self.writes += 1

    def _path(self, key: str) -> Path:
        return self.directory / "tables" / key[:2] / f"{key}.bin"

    def _give_up(self, why: str) -> None:
        print(
            f"harness: warning: {why}; continuing without the cache (check that "
            f"{self.directory} is a directory you can write, or pass --cache-dir DIR or "
            "--no-cache)",
            file=sys.stderr,
        )
        self.directory = None
        return None


def _storable(table: OutcomeTable) -> bool:
    """Only plain values round-trip without classes (a value of the module's own type does not)."""
    return all(_plain(outcome.value) for outcome in table.outcomes)


def _plain(value) -> bool:
    if isinstance(value, PLAIN):
        return True
    if type(value) in (list, tuple, set, frozenset):
        return all(map(_plain, value))
    if type(value) is dict:
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return False


def _encode(key: str, table: OutcomeTable) -> bytes:
    outcomes = [(o.kind, o.value) for o in table.outcomes]
    payload = pickle.dumps((key, outcomes, zlib.compress(table.codes.tobytes(), 1)), protocol=5)
    return MAGIC + hashlib.sha256(payload).digest() + payload


def _decode(data: bytes, key: str, size: int) -> OutcomeTable | None:
    body = data[len(MAGIC) :]
    checksum, payload = body[:32], body[32:]
    if not data.startswith(MAGIC) or hashlib.sha256(payload).digest() != checksum:
        return None
    try:
        stored_key, outcomes, packed = _NoClasses(io.BytesIO(payload)).load()
        codes = array(CODE_TYPE)
        codes.frombytes(zlib.decompress(packed))
    except Exception:
        return None
    if stored_key != key or len(codes) != size or (codes and max(codes) >= len(outcomes)):
        return None
    return OutcomeTable([Outcome(kind, value) for kind, value in outcomes], codes)


class _NoClasses(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refusing {module}.{name}")

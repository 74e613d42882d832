"""Outcome tables on disk, keyed by what they are a function of.

A table depends only on the extracted closure (its digest), the matrix file
and the world, plus harness's own code; the key hashes all four, so a stale
entry cannot be found. Each file carries a checksum of its payload and the
key it was written for, and unpickling admits no classes: a damaged or
foreign file is detected, reported once, and the run carries on uncached.
Temporary files a killed run left behind (older than an hour) are removed at a
run's first write to the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import time
import zlib
from array import array
from functools import cache
from pathlib import Path

from harness.engine.branches import check_flags, check_reached
from harness.engine.outcome import CODE_TYPE, Outcome, OutcomeTable
from harness.errors import inform
from harness.files import temporaries, write_atomically

MAGIC = b"harness-outcomes-2\n"
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


def documents_in(directory: Path) -> Path:
    """Where, in a cache directory, matrix files' parsed documents are kept
    (`harness.matrix.documents`)."""
    return directory / "matrices"


def default_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "harness"


class DiskCache:
    """Files under `directory/kind`, one per key, each carrying a checksum of its payload;
    `directory=None` keeps nothing. A file that cannot be read back whole is reported
    once and treated as missing; a directory that cannot be written is given up."""

    def __init__(self, directory: Path | DiskCache | None, kind: str, magic: bytes) -> None:
        """`directory` may be another cache: the two then share it, and give it up together
        (one warning, not one per kind)."""
        self._place = directory._place if isinstance(directory, DiskCache) else [directory]
        self.kind, self.magic = kind, magic
        self.hits = self.writes = 0

    @property
    def directory(self) -> Path | None:
        return self._place[0]

    @directory.setter
    def directory(self, value: Path | None) -> None:
        self._place[0] = value

    def read(self, key: str) -> bytes | None:
        """The payload stored for `key` (None: nothing, or not whole)."""
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None  # a miss; a directory that cannot exist fails at the first write
        except OSError as exc:
            return self._give_up(f"cannot read {path} ({exc.strerror})")
        body = data[len(self.magic) :]
        checksum, payload = body[:32], body[32:]
        if not data.startswith(self.magic) or hashlib.sha256(payload).digest() != checksum:
            return self.damaged(key)
        return payload

    def damaged(self, key: str) -> None:
        """Say that the file for `key` is damaged (it is made again, and written over)."""
        path = self._path(key)
        inform(f"harness: warning: {path} is damaged; it will be replaced")

    def write(self, key: str, payload: bytes) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        sweep_once(self.directory)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, self.magic + hashlib.sha256(payload).digest() + payload)
        except OSError as exc:
            self._give_up(f"cannot write {path.parent} ({exc.strerror or exc})")
            return
        self.writes += 1

    def _path(self, key: str) -> Path:
        return self.directory / self.kind / key[:2] / f"{key}.bin"

    def _give_up(self, why: str) -> None:
        inform(
            f"harness: warning: {why}; continuing without the cache (check that "
            f"{self.directory} is a directory you can write, or pass --cache-dir DIR or "
            "--no-cache)"
        )
        self.directory = None
        return None


STALE_AFTER = 3600  # seconds: a temporary file this old was left by a process that died
_SWEPT: set[Path] = set()  # cache directories this process has swept


def sweep_once(directory: Path) -> None:
    """Remove the temporary files a killed harness left anywhere in the cache `directory`
    (older than STALE_AFTER: a live writer's is seconds old), once per process, at its
    first write: a run that only reads the cache pays nothing."""
    if directory in _SWEPT:
        return
    _SWEPT.add(directory)
    now = time.time()
    for folder, _, _ in os.walk(directory):  # symbolic links are not followed
        with contextlib.suppress(OSError):
            for stale in temporaries(Path(folder), STALE_AFTER, now):
                stale.unlink(missing_ok=True)


class TableCache(DiskCache):
    """Get and put outcome tables by key; `directory=None` caches nothing."""

    def __init__(self, directory: Path | DiskCache | None) -> None:
        super().__init__(directory, "tables", MAGIC)

    def get(self, key: str, size: int) -> OutcomeTable | None:
        payload = self.read(key)
        if payload is None:
            return None
        table = _decode(payload, key, size)
        if table is None:  # evaluated again, and written over
            return self.damaged(key)
        self.hits += 1
        return table

    def put(self, key: str, table: OutcomeTable) -> None:
        if _storable(table):
            self.write(key, _encode(key, table))


def _storable(table: OutcomeTable) -> bool:
    """Only plain values round-trip without classes (a value of the module's own type does not)."""
    return all(plain(outcome.value) for outcome in table.outcomes)


def plain(value) -> bool:
    """Whether `value` is made of builtin values and containers only (it round-trips
    through `plain_load`)."""
    if isinstance(value, PLAIN):
        return True
    if type(value) in (list, tuple, set, frozenset):
        return all(map(plain, value))
    if type(value) is dict:
        return all(plain(k) and plain(v) for k, v in value.items())
    return False


def _encode(key: str, table: OutcomeTable) -> bytes:
    outcomes = [(o.kind, o.value) for o in table.outcomes]
    packed = zlib.compress(table.codes.tobytes(), 1)
    return pickle.dumps((key, outcomes, packed, table.branches, table.reached), protocol=5)


def _decode(payload: bytes, key: str, size: int) -> OutcomeTable | None:
    try:
        stored_key, outcomes, packed, branches, reached = plain_load(payload)
        codes = array(CODE_TYPE)
        codes.frombytes(zlib.decompress(packed))
        branches = check_flags(branches)
        reached = check_reached(reached, len(branches), size)
    except Exception:
        return None
    if stored_key != key or len(codes) != size or (codes and max(codes) >= len(outcomes)):
        return None
    return OutcomeTable([Outcome(k, v) for k, v in outcomes], codes, branches, reached)


def plain_load(payload: bytes):
    """Unpickle plain data only: any class in the payload is refused (an error)."""
    return _NoClasses(io.BytesIO(payload)).load()


class _NoClasses(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refusing {module}.{name}")

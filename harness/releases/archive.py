"""The members of a wheel or an sdist, read without unpacking the archive.

A wheel is a zip whose central directory sits at its end: with HTTP range
requests, reading the end, the directory and the few members needed costs a
few hundred KB of a 40 MB wheel. A server that does not answer ranges gets one
whole download, checked against the index's sha256. Each member is checked
against its CRC-32 and its size; nothing is ever written outside the cache.

Archives are hostile data, so every read is bounded before it is made: a
member whose declared size is over MAX_MEMBER is refused before a byte of it
is inflated, and inflating never goes past the declared size (a zip that lies
about it is refused after size + 1 bytes); the members read from one archive
inflate to MAX_INFLATED at most, together. An sdist is a compressed tarball,
which cannot be read by ranges: it is downloaded whole (and checked), then
decompressed as a stream that stops at MAX_INFLATED, keeping its `.py` files.

`verified` on an archive is the sha256 of the whole file when its bytes were
checked against it (a whole download matching the index's sha256, a local
file hashed here); None when they were not (range reads, an index listing no
sha256). Only what a verified digest covers may be cached under it.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import struct
import tarfile
import zlib
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError, first_line
from harness.http import Http, shown

TAIL = 64 << 10  # bytes read from a zip's end: the end record and, often, the directory
MAX_MEMBER = 16 << 20  # bytes of one member, uncompressed
MAX_INFLATED = 256 << 20  # bytes inflated from one archive, all members together
MAX_DIRECTORY = 16 << 20  # bytes of a zip's central directory
MAX_ARCHIVE = 1 << 30  # bytes of a whole download
EOCD, CENTRAL, LOCAL = b"PK\x05\x06", b"PK\x01\x02", b"PK\x03\x04"


@dataclass(frozen=True)
class Member:
    name: str
    method: int  # 0 stored, 8 deflated
    crc: int
    packed: int  # compressed size
    size: int
    offset: int  # of its local header

    @property
    def fingerprint(self) -> str:
        """What the archive's directory says of the member's bytes (CRC-32 and size)."""
        return f"{self.crc:08x}-{self.size}"


class _Zip:
    """A zip read member by member through `_bytes(first, last)`, within the bounds above."""

    label: str
    members: dict[str, Member]
    verified: str | None = None
    inflated = 0  # bytes of the members read so far, as declared

    def names(self) -> list[str]:
        return list(self.members)

    def fingerprint(self, name: str) -> str:
        return self.members[name].fingerprint

    def read(self, name: str) -> bytes:
        member = self.members[name]
        self._budget(member)
        span = 30 + len(name.encode()) + member.packed + 1024  # a local extra field, if any
        data = self._bytes(member.offset, member.offset + span - 1)
        if data[:4] != LOCAL:
            raise self._damaged(f"no local header for {name}")
        name_len, extra_len = struct.unpack("<HH", data[26:30])
        start = 30 + name_len + extra_len
        if start + member.packed > len(data):
            more = member.offset + len(data)
            data += self._bytes(more, member.offset + start + member.packed - 1)
        return _inflate(member, data[start : start + member.packed], self.label)

    def _budget(self, member: Member) -> None:
        """Refuse a member by its declared sizes, before anything of it is read."""
        if member.size > MAX_MEMBER or member.packed > MAX_MEMBER + (MAX_MEMBER >> 4):
            raise HarnessError(f"{self.label}: {member.name} is larger than {MAX_MEMBER >> 20} MB")
        self.inflated += member.size
        if self.inflated > MAX_INFLATED:
            raise HarnessError(
                f"{self.label}: the members read inflate to more than {MAX_INFLATED >> 20} MB "
                "together: refusing the archive"
            )

    def _directory(self, tail: bytes, start: int, total: int) -> dict[str, Member]:
        """The members, from the file's last bytes `tail` (starting at `start` of `total`)."""
        at = tail.rfind(EOCD)
        if at < 0 or len(tail) < at + 22:
            raise self._damaged("no end of central directory")
        entries, size, offset = struct.unpack("<10xHII", tail[at : at + 20])
        if offset == 0xFFFFFFFF or entries == 0xFFFF:
            raise HarnessError(f"{self.label}: a ZIP64 archive; harness reads zips under 4 GB")
        if offset + size > total:
            raise self._damaged("a central directory past the end of the file")
        if size > MAX_DIRECTORY:
            raise self._damaged(f"a central directory over {MAX_DIRECTORY >> 20} MB")
        directory = tail[offset - start : offset - start + size] if offset >= start else b""
        if len(directory) < size:
            directory = self._bytes(offset, offset + size - 1)
        return _central(directory, entries, self.label)

    def _bytes(self, first: int, last: int) -> bytes:
        raise NotImplementedError

    def _damaged(self, what: str) -> HarnessError:
        return HarnessError(f"{self.label}: not a readable wheel ({what})")


class MemoryZip(_Zip):
    """A zip held whole (a local wheel, or a download); `verified` as the module says."""

    def __init__(self, data: bytes, label: str, verified: str | None = None) -> None:
        self.data, self.label, self.verified = data, label, verified
        start = max(0, len(data) - TAIL)
        self.members = self._directory(data[start:], start, len(data))

    def _bytes(self, first: int, last: int) -> bytes:
        return self.data[first : last + 1]


class RangeZip(_Zip):
    """A remote zip read by HTTP ranges; `whole` holds it when the server sent it all."""

    def __init__(self, http: Http, url: str, sha256: str | None, label: str) -> None:
        self.http, self.url, self.sha256, self.label = http, url, sha256, label
        self.whole: MemoryZip | None = None
        self.members = self._open()
        self.verified = self.whole.verified if self.whole else None

    def names(self) -> list[str]:
        return self.whole.names() if self.whole else list(self.members)

    def fingerprint(self, name: str) -> str:
        return self.whole.fingerprint(name) if self.whole else super().fingerprint(name)

    def read(self, name: str) -> bytes:
        return self.whole.read(name) if self.whole else super().read(name)

    def _open(self) -> dict[str, Member]:
        answer = self._get({"Range": f"bytes=-{TAIL}"})
        if answer.status_code == 200:  # no ranges here: this was the whole file
            data = checked(answer.content, self.sha256, self.label)
            self.whole = MemoryZip(data, self.label, self.sha256)
            return {}
        total = _total_size(answer.headers.get("Content-Range", ""), self.label)
        return self._directory(answer.content, total - len(answer.content), total)

    def _bytes(self, first: int, last: int) -> bytes:
        answer = self._get({"Range": f"bytes={first}-{last}"}, last - first + 1)
        if answer.status_code != 206:
            raise self._damaged(f"the server stopped answering ranges (HTTP {answer.status_code})")
        return answer.content

    def _get(self, headers: dict[str, str], size: int = MAX_ARCHIVE):
        """A GET of at most `size` bytes (a range asked for; the whole file otherwise)."""
        answer = self.http.request("GET", self.url, headers=headers, limit=size)
        if answer.status_code not in (200, 206):
            raise HarnessError(
                f"{self.label}: the package index answered HTTP {answer.status_code} for "
                f"{shown(self.url)}"
            )
        return answer


class Tarball:
    """An sdist (.tar.gz, also .tar.bz2, .tar.xz or plain) held whole; its `.py` files by
    name, regular files only, decompressed as a stream of at most MAX_INFLATED bytes."""

    def __init__(self, data: bytes, label: str, verified: str | None = None) -> None:
        self.label, self.verified, self.files = label, verified, {}
        try:
            stream = _Bounded(_decompressed(data), label)
            with tarfile.open(fileobj=stream, mode="r|") as tar:
                for info in tar:
                    if info.isfile() and info.size <= MAX_MEMBER and info.name.endswith(".py"):
                        handle = tar.extractfile(info)
                        self.files[info.name] = handle.read() if handle else b""
        except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, ValueError,
                UnicodeError) as exc:  # fmt: skip
            raise HarnessError(f"{label}: not a readable sdist ({first_line(exc, 120)})") from None

    def names(self) -> list[str]:
        return list(self.files)

    def fingerprint(self, name: str) -> str:
        data = self.files[name]
        return f"{zlib.crc32(data):08x}-{len(data)}"

    def read(self, name: str) -> bytes:
        return self.files[name]


def open_sdist(data: bytes, label: str, verified: str | None = None) -> Tarball | MemoryZip:
    """An sdist's archive: a zip (the older `.zip` sdists), else a tarball."""
    if data[:4] == LOCAL:
        return MemoryZip(data, label, verified)
    return Tarball(data, label, verified)


def _decompressed(data: bytes) -> Any:
    """A file object of `data` decompressed, by its magic number (plain when none)."""
    raw = io.BytesIO(data)
    if data[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw)
    if data[:3] == b"BZh":
        return bz2.BZ2File(raw)
    if data[:6] == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(raw)
    return raw


class _Bounded(io.RawIOBase):
    """A reader that refuses (one line) to give more than MAX_INFLATED bytes in all."""

    def __init__(self, inner: Any, label: str) -> None:
        self.inner, self.label, self.total = inner, label, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = MAX_INFLATED + 1 - self.total if size < 0 else min(size, MAX_INFLATED + 1)
        data = self.inner.read(want)
        self.total += len(data)
        if self.total > MAX_INFLATED:
            raise HarnessError(
                f"{self.label}: the sdist decompresses to more than {MAX_INFLATED >> 20} MB: "
                "refusing it"
            )
        return data


def checked(data: bytes, sha256: str | None, label: str) -> bytes:
    """`data`, when its sha256 is the one the index gave (or none was given)."""
    if sha256 and hashlib.sha256(data).hexdigest() != sha256.lower():
        raise HarnessError(
            f"{label}: the download's sha256 is not the one the package index lists "
            f"({sha256[:16]}...): refusing it"
        )
    return data


def _total_size(content_range: str, label: str) -> int:
    try:
        return int(content_range.rsplit("/", 1)[1])
    except (IndexError, ValueError):
        raise HarnessError(f"{label}: the server's range answer has no total size") from None


def _central(data: bytes, entries: int, label: str) -> dict[str, Member]:
    members, at = {}, 0
    for _ in range(entries):
        if data[at : at + 4] != CENTRAL or len(data) < at + 46:
            raise HarnessError(f"{label}: not a readable wheel (a damaged central directory)")
        fields = struct.unpack("<4sHHHHHHIIIHHHHHII", data[at : at + 46])  # 46 bytes checked
        method, crc, packed, size = fields[4], fields[7], fields[8], fields[9]
        name_len, extra_len, comment_len, offset = fields[10], fields[11], fields[12], fields[16]
        name = data[at + 46 : at + 46 + name_len].decode("utf-8", errors="replace")
        if not name.endswith("/"):
            members[name] = Member(name, method, crc, packed, size, offset)
        at += 46 + name_len + extra_len + comment_len
    return members


def _inflate(member: Member, packed: bytes, label: str) -> bytes:
    """The member's bytes: at most its declared size + 1 are ever inflated, and they must
    be its declared size and CRC."""
    if member.method == 0:
        data = packed
    elif member.method == 8:
        inflater = zlib.decompressobj(-15)
        try:
            data = inflater.decompress(packed, member.size + 1)
        except zlib.error as exc:
            raise HarnessError(f"{label}: {member.name} cannot be inflated ({exc})") from None
    else:
        raise HarnessError(f"{label}: {member.name} uses compression method {member.method}")
    if len(data) != member.size or zlib.crc32(data) != member.crc:
        raise HarnessError(f"{label}: {member.name} fails its CRC or size check: damaged")
    return data

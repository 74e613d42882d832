"""The members of a wheel or an sdist, read without unpacking the archive.

A wheel is a zip whose central directory sits at its end: with HTTP range
requests, reading the end, the directory and the few members needed costs a
few hundred KB of a 40 MB wheel. A server that does not answer ranges gets one
whole download, checked against the index's sha256. Each member is checked
against its CRC-32 and its size; nothing is ever written outside the cache,
and a member bigger than MAX_MEMBER is refused (a zip bomb is one line).
An sdist is a gzipped tarball, which cannot be read by ranges: it is
downloaded whole (and checked), then read in memory.
"""

from __future__ import annotations

import hashlib
import io
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass

from harness.errors import HarnessError
from harness.http import Http, shown

TAIL = 64 << 10  # bytes read from a zip's end: the end record and, often, the directory
MAX_MEMBER = 16 << 20  # bytes of one member, uncompressed
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


class RangeZip:
    """A remote zip read by HTTP ranges; `whole` holds it when the server sent it all."""

    def __init__(self, http: Http, url: str, sha256: str | None, label: str) -> None:
        self.http, self.url, self.sha256, self.label = http, url, sha256, label
        self.whole: MemoryZip | None = None
        self.members = self._directory()

    def names(self) -> list[str]:
        return self.whole.names() if self.whole else list(self.members)

    def read(self, name: str) -> bytes:
        if self.whole is not None:
            return self.whole.read(name)
        member = self.members[name]
        span = 30 + len(name.encode()) + member.packed + 1024  # a local extra field, if any
        data = self._range(member.offset, member.offset + span - 1)
        if data[:4] != LOCAL:
            raise self._damaged(f"no local header for {name}")
        name_len, extra_len = struct.unpack("<HH", data[26:30])
        start = 30 + name_len + extra_len
        if start + member.packed > len(data):
            more = member.offset + len(data)
            data += self._range(more, member.offset + start + member.packed - 1)
        return _inflate(member, data[start : start + member.packed], self.label)

    def _directory(self) -> dict[str, Member]:
        answer = self._get({"Range": f"bytes=-{TAIL}"})
        if answer.status_code == 200:  # no ranges here: this was the whole file
            self.whole = MemoryZip(checked(answer.content, self.sha256, self.label), self.label)
            return {}
        total = _total_size(answer.headers.get("Content-Range", ""), self.label)
        tail, start = answer.content, total - len(answer.content)
        at = tail.rfind(EOCD)
        if at < 0 or len(tail) < at + 22:
            raise self._damaged("no end of central directory")
        entries, size, offset = struct.unpack("<10xHII", tail[at : at + 20])
        if offset == 0xFFFFFFFF or entries == 0xFFFF:
            raise HarnessError(f"{self.label}: a ZIP64 archive; harness reads zips under 4 GB")
        if offset + size > total:
            raise self._damaged("a central directory past the end of the file")
        directory = tail[offset - start : offset - start + size] if offset >= start else b""
        if len(directory) < size:
            directory = self._range(offset, offset + size - 1)
        return _central(directory, entries, self.label)

    def _range(self, first: int, last: int) -> bytes:
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

    def _damaged(self, what: str) -> HarnessError:
        return HarnessError(f"{self.label}: not a readable wheel ({what})")


class MemoryZip:
    """A zip held whole (a local wheel, or a download)."""

    def __init__(self, data: bytes, label: str) -> None:
        self.label = label
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
        except zipfile.BadZipFile as exc:
            raise HarnessError(f"{label}: not a readable wheel ({exc})") from None
        self.infos = {i.filename: i for i in self.zip.infolist() if not i.is_dir()}

    def names(self) -> list[str]:
        return list(self.infos)

    def read(self, name: str) -> bytes:
        info = self.infos[name]
        if info.file_size > MAX_MEMBER:
            raise HarnessError(f"{self.label}: {name} is larger than {MAX_MEMBER >> 20} MB")
        try:
            return self.zip.read(info)
        except (zipfile.BadZipFile, zlib.error, OSError) as exc:
            raise HarnessError(f"{self.label}: {name} cannot be read ({exc})") from None


class Tarball:
    """An sdist (.tar.gz) held whole; members by name, regular files only."""

    def __init__(self, data: bytes, label: str) -> None:
        self.label, self.files = label, {}
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                for info in tar:
                    if info.isfile() and info.size <= MAX_MEMBER and info.name.endswith(".py"):
                        handle = tar.extractfile(info)
                        self.files[info.name] = handle.read() if handle else b""
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            raise HarnessError(f"{label}: not a readable sdist ({exc})") from None

    def names(self) -> list[str]:
        return list(self.files)

    def read(self, name: str) -> bytes:
        return self.files[name]


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
    if member.size > MAX_MEMBER:
        raise HarnessError(f"{label}: {member.name} is larger than {MAX_MEMBER >> 20} MB")
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

"""Releases as revisions: `pypi:NAME==VERSION`, `wheel:PATH`, `sdist:PATH`.

A release's files are its archive's members, mapped to repository paths by the
package's layout: the wheel's `sglang/srt/...` is the repository's
`python/sglang/srt/...` (the prefix is found by matching the matrix's target
path against the members), so a matrix written for the repository works
unchanged.

The cache keeps only bytes whose digest was checked. A member read is kept
under its CRC-32 and size as the archive's directory gives them (read afresh
from the server on each run with range reads), and checked against both when
read back: a damaged or poisoned entry is read again from the archive. What
range reads gave is kept apart for each URL it came from (a CRC-32 can be
forged: one mirror's bytes never stand in for another's). An
archive's directory is kept, under the file's sha256, only when the whole file
was checked against that sha256 (a whole download, a local file): a sha256 an
index lists never vouches for bytes it did not cover. A pin's resolution is
kept too, without the credentials of the index URL (and keyed without them).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.errors import Absent, HarnessError
from harness.files import write_atomically
from harness.gitio import RELEASE, Revision, python_source, resolve
from harness.http import Http, lent, stripped
from harness.releases.archive import MAX_ARCHIVE, MemoryZip, RangeZip, checked, open_sdist
from harness.releases.index import DistFile, choose, index_http, index_url, project_files
from harness.releases.revisions import FORM, FORMS, is_release

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


@dataclass
class Release:
    """One release's files, read on demand from its archive (or the cache)."""

    label: str  # "sglang 0.5.23"
    subject: str  # what reports show: the release and the file read
    key: str  # the file's sha256 (listed, or computed for a local file), else "url-" + a hash
    open_archive: Callable[[], Any]  # -> RangeZip | MemoryZip | Tarball
    cache: Path | None
    date: str = ""
    version: Version | None = None
    siblings: Callable[[], list[DistFile]] | None = None  # the project's files on its index
    http: Http | None = None
    source: str = "local"  # where the file is read from: a hash of its URL (no credentials)
    _archive: Any = field(default=None, repr=False)
    _names: dict[str, str] | None = field(default=None, repr=False)  # name -> fingerprint
    _layout: dict[tuple[str, ...], tuple[str, str]] = field(default_factory=dict, repr=False)

    def reader(self, targets: tuple[str, ...]) -> Callable[[str], str | None]:
        """Repository path -> text, for a matrix whose target is the first of `targets` the
        archive holds (the archive is opened, and the layout found, at the first read:
        Absent then says what is missing)."""

        def read(path: str) -> str | None:
            strip, prefix = self._layout_for(targets)
            if not path.startswith(prefix):
                return None
            member = strip + path[len(prefix) :]
            if member not in self.names():
                return None
            return python_source(self._member(member), path)

        return read

    def names(self) -> dict[str, str]:
        """Member name -> fingerprint (CRC-32 and size): from the cache when a checked
        whole file gave them, else from the archive."""
        if self._names is None:
            self._names = _directory_from(self._cached("directory.json"))
            if self._names is None:
                self._names = self._directory()
        return self._names

    def _directory(self) -> dict[str, str]:
        archive = self.archive()
        found = {name: archive.fingerprint(name) for name in sorted(archive.names())}
        if archive.verified is not None and archive.verified == self.key:
            self._store("directory.json", json.dumps(found).encode())
        return found

    def archive(self) -> Any:
        if self._archive is None:
            self._archive = self.open_archive()
        return self._archive

    def _layout_for(self, targets: tuple[str, ...]) -> tuple[str, str]:
        """(the archive's own top directory, the repository prefix its files live under),
        from the first of `targets` the archive holds."""
        if targets not in self._layout:
            names = list(self.names())
            for target in targets:
                try:
                    self._layout[targets] = _layout(names, target, self.label)
                    break
                except Absent:
                    continue
            else:
                raise Absent(_missing(targets, self.label))
        return self._layout[targets]

    def _member(self, name: str) -> bytes:
        """The member's bytes, from the cache when they match its fingerprint there."""
        fingerprint = self.names()[name]
        cached = self._cached(self._entry(name, fingerprint))
        if cached is not None and _fingerprint(cached) == fingerprint:
            return cached
        data = self.archive().read(name)
        if self.archive().fingerprint(name) != fingerprint or _fingerprint(data) != fingerprint:
            raise HarnessError(
                f"{self.label}: the server's {name} is not the one of the file whose sha256 the "
                "index lists (checked on an earlier download): refusing it"
            )
        self._store(self._entry(name, fingerprint), data)
        return data

    def _entry(self, name: str, fingerprint: str) -> str:
        """Where a member is cached: with the checked ones when its archive was checked (or
        not opened: the directory came from a checked file), else apart, per source."""
        checked = self._archive is None or self._archive.verified == self.key
        return f"{'members' if checked else 'ranged/' + self.source}/{fingerprint}/{name}"

    def _cached(self, name: str) -> bytes | None:
        return _read_cached(self._path(name))

    def _store(self, name: str, data: bytes) -> None:
        _write_cached(self._path(name), data)

    def _path(self, name: str) -> Path | None:
        if self.cache is None or ".." in name.split("/") or name.startswith("/"):
            return None
        return self.cache / "releases" / self.key / name


def _fingerprint(data: bytes) -> str:
    """As `archive.Member.fingerprint`: CRC-32 and size."""
    return f"{zlib.crc32(data):08x}-{len(data)}"


def _read_cached(path: Path | None) -> bytes | None:
    try:
        return path.read_bytes() if path is not None else None
    except (OSError, ValueError):  # ValueError: a NUL in a hostile member name
        return None


def _write_cached(path: Path | None, data: bytes) -> None:
    """Keep `data` at `path`, whole or not at all; the cache is an optimization, so a
    failure to write it is not an error."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, data)
    except (OSError, ValueError):
        pass


def _directory_from(data: bytes | None) -> dict[str, str] | None:
    """A cached directory, if it is one (a damaged file is read again from the archive)."""
    try:
        found = json.loads(data) if data is not None else None
    except ValueError:
        return None
    ok = isinstance(found, dict) and all(isinstance(v, str) for v in found.values())
    return found if ok else None


def _missing(targets: tuple[str, ...], label: str) -> str:
    if len(targets) == 1:
        return f"{targets[0]} is not in {label} (no member of the archive ends with it)"
    return f"none of {', '.join(targets)} is in {label} (no member of the archive ends with one)"


def _layout(names: list[str], target: str, label: str) -> tuple[str, str]:
    """Match the target path against the members (each also without its first directory,
    an sdist's `NAME-VERSION/`): the longest member path the target ends with gives the
    repository prefix."""
    best: tuple[int, str, str] | None = None
    for name in names:
        options = [("", name)]
        if "/" in name:
            top, rest = name.split("/", 1)
            options.append((top + "/", rest))
        for strip, rest in options:
            if target == rest or target.endswith("/" + rest):
                candidate = (len(rest), strip, target[: len(target) - len(rest)])
                best = candidate if best is None else max(best, candidate)
    if best is None:
        raise Absent(_missing((target,), label))
    return best[1], best[2]


def resolve_revision(
    repo: Any,
    expr: str,
    index: str | None = None,
    cache: Path | None = None,
    lookup: Any = None,
    cert: str | None = None,
) -> Revision:
    """A release (pypi:, wheel:, sdist:), else a commit of `repo` (see gitio.resolve);
    `cert` is `--cert` (see `harness.releases.tls`)."""
    if is_release(expr):
        return release_revision(expr, index, cache, cert)
    if repo is None:
        raise HarnessError(
            f"revision {expr!r} is a commit, and there is no repository here: pass --repo "
            f"PATH, or name releases ({FORMS})"
        )
    return resolve(repo, expr, lookup)


@dataclass(frozen=True)
class ReleaseRevision:
    """A release as a revision (`harness.gitio.Revision`): no commit, its files read from
    the release's archive."""

    expr: str
    subject: str
    date: str
    release: Release = field(compare=False)
    kind: ClassVar[str] = RELEASE
    sha: ClassVar[None] = None

    @property
    def short(self) -> str:
        return self.expr

    @property
    def label(self) -> str:
        return self.expr

    def files(self, repo: Any, target: str, also: tuple[str, ...] = ()) -> ReleaseFiles:
        return ReleaseFiles(self.release.reader((target, *also)))


@dataclass(frozen=True)
class ReleaseFiles:
    """A release's files: read from its archive; no blob ids, no git patches."""

    read: Callable[[str], str | None]
    ident: None = None
    edit: None = None


def release_revision(
    expr: str, index: str | None, cache: Path | None, cert: str | None = None
) -> Revision:
    """A revision that is a release (no git): what `diff`, `history` and the rest accept."""
    release = resolve_release(expr, index, cache, cert)
    return ReleaseRevision(expr, release.subject, release.date, release)


def resolve_release(
    expr: str, index: str | None, cache: Path | None, cert: str | None = None
) -> Release:
    """The release an expression names (see FORMS); one line when it names none."""
    match = FORM.match(expr)
    if match is None:
        raise HarnessError(f"revision {expr!r}: expected {FORMS}")
    kind, rest = match.groups()
    if kind == "pypi":
        return _from_index(expr, rest, index_url(index), cache, cert)
    return _from_file(expr, kind, Path(rest), cache)


def _from_index(expr: str, pin: str, index: str, cache: Path | None, cert: str | None) -> Release:
    match = PIN.match(pin)
    if match is None:
        raise HarnessError(f"revision {expr!r}: expected pypi:NAME==VERSION, e.g. "
                           "pypi:sglang==0.5.23")  # fmt: skip
    name, text = match.groups()
    try:
        version = Version(text)
    except InvalidVersion:
        raise HarnessError(f"revision {expr!r}: {text!r} is not a version (PEP 440)") from None
    http = index_http(cert)
    label = f"{canonicalize_name(name)} {version}"
    chosen = _pinned(cache, index, name, version)
    if chosen is None:
        chosen = choose(project_files(http, index, name), version, expr)
        _remember_pin(cache, index, name, version, chosen)
    if chosen.yanked is not None:
        why = f": {chosen.yanked}" if chosen.yanked else ""
        print(f"harness: warning: {label} is yanked on the index{why}", file=sys.stderr)
    siblings = functools.cache(lambda: project_files(http, index, name))
    return release_for(chosen, http, cache, siblings)


def release_for(chosen: DistFile, http: Http, cache: Path | None, siblings: Any = None) -> Release:
    """The release a file of the index holds (the wheel or sdist `choose` picked)."""
    label = f"{chosen.filename.split('-', 1)[0]} {chosen.version}"
    source = _sha(stripped(chosen.url).encode())
    key = chosen.sha256 or "url-" + source
    return Release(label, f"{label} ({chosen.filename})", key,
                   lambda: _open_remote(http, chosen, label), cache, chosen.uploaded,
                   chosen.version, siblings, http, source[:16])  # fmt: skip


def releases_between(good: Revision, bad: Revision) -> list[Revision]:
    """The releases after GOOD up to BAD (both pins of one project on one index), in version
    order, yanked ones and pre-releases left out (unless an endpoint is one)."""
    first, last = good.release, bad.release
    if first is None or last is None or first.siblings is None or last.siblings is None:
        raise HarnessError(
            f"bisect GOOD {good.label} BAD {bad.label}: both must be pypi:NAME==VERSION pins of "
            "one project (or both commits)"
        )
    if first.label.split()[0] != last.label.split()[0] or first.version >= last.version:
        raise HarnessError(
            f"bisect GOOD {good.label} BAD {bad.label}: GOOD must be an earlier release of the "
            "same project"
        )
    pre = first.version.is_prerelease or last.version.is_prerelease
    files = [f for f in last.siblings() if first.version < f.version <= last.version]
    out = []
    for version in sorted({f.version for f in files}):
        usable = [f for f in files if f.version == version and f.yanked is None]
        if (usable and (pre or not version.is_prerelease)) or version == last.version:
            release = (
                last if version == last.version
                else release_for(choose(usable, version, ""), last.http, first.cache)
            )  # fmt: skip
            name = first.label.split()[0]
            expr = f"pypi:{name}=={version}"
            out.append(ReleaseRevision(expr, release.subject, release.date, release))
    return out


def _open_remote(http: Http, chosen: DistFile, label: str) -> Any:
    if chosen.wheel:
        return RangeZip(http, chosen.url, chosen.sha256, label)
    answer = http.request("GET", chosen.url, limit=MAX_ARCHIVE)
    if answer.status_code != 200:
        raise HarnessError(f"{label}: the package index answered HTTP {answer.status_code}")
    return open_sdist(checked(answer.content, chosen.sha256, label), label, chosen.sha256)


def _from_file(expr: str, kind: str, path: Path, cache: Path | None) -> Release:
    data = _read_archive(expr, path)
    label, key = path.name, _sha(data)
    opener = (lambda: MemoryZip(data, label, key)) if kind == "wheel" else (
        lambda: open_sdist(data, label, key))  # fmt: skip
    return Release(label, f"{label} (a local {kind})", key, opener, cache)


def _read_archive(expr: str, path: Path) -> bytes:
    """A local archive's bytes: a regular file (a FIFO or a device is refused before it is
    opened) of at most MAX_ARCHIVE bytes."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise HarnessError(f"revision {expr!r}: {path} is not a regular file")
        with path.open("rb") as handle:
            size = min(os.fstat(handle.fileno()).st_size, MAX_ARCHIVE)  # read(n) allocates n
            data = handle.read(size + 1)
    except OSError as exc:
        raise HarnessError(f"revision {expr!r}: cannot read {path} ({exc.strerror})") from None
    if len(data) > MAX_ARCHIVE:
        raise HarnessError(f"revision {expr!r}: {path} is larger than {MAX_ARCHIVE >> 20} MB")
    return data


def _pin_path(cache: Path | None, index: str, name: str, version: Version) -> Path | None:
    if cache is None:
        return None
    where = _sha(stripped(index).encode())[:16]
    return cache / "releases" / "pins" / where / f"{canonicalize_name(name)}-{version}.json"


def _pinned(cache: Path | None, index: str, name: str, version: Version) -> DistFile | None:
    data = _read_cached(_pin_path(cache, index, name, version))
    try:
        doc = json.loads(data) if data is not None else None
        found = DistFile(**{**doc, "version": version}) if isinstance(doc, dict) else None
        return replace(found, url=lent(found.url, index)) if found is not None else None
    except (ValueError, TypeError, AttributeError):
        return None


def _remember_pin(cache, index: str, name: str, version: Version, chosen: DistFile) -> None:
    doc = {k: v for k, v in chosen.__dict__.items() if k != "version"}
    doc["url"] = stripped(chosen.url)  # credentials are never stored
    _write_cached(_pin_path(cache, index, name, version), json.dumps(doc).encode())


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

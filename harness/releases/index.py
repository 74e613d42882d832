"""A package index's simple API (PEP 503, PEP 691): a project's files and their versions.

The JSON form is asked for first, the HTML form understood as the fallback.
Every answer is data from a server we do not control: a name, a URL, a
sha256, a yanked flag, each checked for its type; anything else is ignored.
As pip has it, a remote page may only link to http(s) files: a link from an
http(s) page to `file:` (or any other scheme) is left out. A `file:` page (an
index on disk the user named) may link to files on disk too.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from harness.errors import HarnessError
from harness.http import Http, shown
from harness.releases.pipconfig import setting
from harness.releases.tls import index_trust

DEFAULT_INDEX = "https://pypi.org/simple"
ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.01"
SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
MAX_PAGE = 32 << 20


@dataclass(frozen=True)
class DistFile:
    """One file of a release, as the index lists it."""

    filename: str
    url: str
    sha256: str | None
    version: Version
    wheel: bool
    pure: bool  # a py3-none-any wheel
    yanked: str | None = None  # the reason ("" when none was given); None: not yanked
    uploaded: str = ""  # PEP 700's upload-time, when the index gives it


REMOTE = ("http", "https")


def index_url(option: str | None) -> str:
    """--index-url, else PIP_INDEX_URL, else pip's configured index-url, else the public
    index (as pip chooses; its credentials are never shown nor stored); one line when it
    is not an http(s) or file: URL."""
    if option:
        return _checked_index(option, "--index-url")
    if os.environ.get("PIP_INDEX_URL"):
        return _checked_index(os.environ["PIP_INDEX_URL"], "PIP_INDEX_URL")
    configured = setting("index-url", os.environ)
    if configured is None:
        return DEFAULT_INDEX
    return _checked_index(configured.value, f"index-url in [{configured.section}] of "
                          f"{configured.path}")  # fmt: skip


def _checked_index(url: str, where: str) -> str:
    url = url.strip().rstrip("/")
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        parts = None
    if parts is None or not (
        parts.scheme == "file" or (parts.scheme in REMOTE and bool(parts.hostname))
    ):
        raise HarnessError(
            f"{where} {shown(url)!r}: not a package index URL; expected https://HOST/PATH "
            "(e.g. https://pypi.org/simple), or file:///PATH for an index on disk"
        )
    return url


def index_http(cert: str | None) -> Http:
    """A client for the package index, checking its certificate against the CA source
    `--cert` (`cert`, None when not given) and pip's settings choose (`tls.index_trust`),
    chosen at its first request over the network."""
    return Http("package index", trust=lambda: index_trust(cert))


def project_files(http: Http, index: str, name: str) -> list[DistFile]:
    """Every wheel and sdist of project `name` the index lists."""
    url = f"{index}/{canonicalize_name(name)}/"
    answer = http.request("GET", url, headers={"Accept": ACCEPT}, limit=MAX_PAGE)
    if answer.status_code == 404:
        raise HarnessError(f"{name}: no such project on the package index {shown(index)}")
    if answer.status_code >= 300:
        raise HarnessError(f"the package index answered HTTP {answer.status_code} for {shown(url)}")
    kind = answer.headers.get("Content-Type", "")
    entries = _json_entries(answer.content, shown(url)) if "json" in kind else _html_entries(answer)
    files = [f for f in (_dist_file(e, url, name) for e in entries) if f is not None]
    return sorted(files, key=lambda f: (f.version, f.filename))


def choose(files: list[DistFile], version: Version, label: str) -> DistFile:
    """The file to read a release's Python sources from: a pure wheel, else any wheel
    (the sources are the same in every wheel of a release), else the sdist; the first by
    file name among equals, so the choice is the same on every machine."""
    found = [f for f in files if f.version == version]
    if not found:
        listed = sorted({str(f.version) for f in files}, key=Version)[-5:]
        raise HarnessError(
            f"{label}: no file of version {version} on the index (latest: {', '.join(listed)})"
        )
    return min(found, key=lambda f: (not f.pure, not f.wheel, f.filename))


def _json_entries(content: bytes, url: str) -> list[dict]:
    try:
        doc = json.loads(content)
    except (ValueError, RecursionError):
        raise HarnessError(f"the package index answered {url} with malformed JSON") from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise HarnessError(f"the package index answered {url} without a list of files")
    out = []
    for item in files:
        if not isinstance(item, dict):
            continue
        hashes = item.get("hashes") if isinstance(item.get("hashes"), dict) else {}
        out.append({
            "filename": item.get("filename"), "url": item.get("url"),
            "sha256": hashes.get("sha256"), "yanked": item.get("yanked"),
            "uploaded": item.get("upload-time"),
        })  # fmt: skip
    return out


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict] = []
        self._open: dict | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "a":
            found = dict(attrs)
            self._open = {"href": found.get("href"), "yanked": found.get("data-yanked"),
                          "text": ""}  # fmt: skip

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.found.append(self._open)
            self._open = None


def _html_entries(answer) -> list[dict]:
    parser = _Anchors()
    parser.feed(answer.content.decode("utf-8", errors="replace"))
    out = []
    for anchor in parser.found:
        href = anchor["href"] or ""
        url, fragment = urldefrag(href)
        sha = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
        name = url.rsplit("/", 1)[-1] or anchor["text"].strip()
        out.append({"filename": name, "url": url, "sha256": sha, "yanked": anchor["yanked"]})
    return out


def _dist_file(entry: dict, page: str, project: str) -> DistFile | None:
    filename, url = entry.get("filename"), entry.get("url")
    if not (isinstance(filename, str) and isinstance(url, str)) or "/" in filename:
        return None
    sha = entry.get("sha256")
    sha = sha.lower() if isinstance(sha, str) and SHA256.match(sha) else None
    yanked = entry.get("yanked")
    reason = None if yanked in (None, False) else (yanked if isinstance(yanked, str) else "")
    uploaded = entry.get("uploaded") if isinstance(entry.get("uploaded"), str) else ""
    parsed = _parse(filename, project)
    if parsed is None:
        return None
    version, wheel, pure = parsed
    found = urljoin(page, url)
    if not _may_link(page, found):
        return None
    return DistFile(filename, found, sha, version, wheel, pure, reason, uploaded)


def _may_link(page: str, url: str) -> bool:
    """Whether a file the page at `page` lists may be read at `url`: http(s) from anywhere,
    a file on disk from a page on disk only."""
    scheme = urlsplit(url).scheme.lower()
    return scheme in REMOTE or (scheme == "file" and urlsplit(page).scheme.lower() == "file")


def _parse(filename: str, project: str) -> tuple[Version, bool, bool] | None:
    try:
        if filename.endswith(".whl"):
            name, version, _, tags = parse_wheel_filename(filename)
            pure = any(t.abi == "none" and t.platform == "any" for t in tags)
            wheel = True
        elif filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
            wheel = pure = False
        else:
            return None
    except (InvalidWheelFilename, InvalidSdistFilename, ValueError):
        return None
    if canonicalize_name(name) != canonicalize_name(project):
        return None
    return version, wheel, pure

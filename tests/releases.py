"""Wheels, sdists and a package index of our own SGLang-shaped package, for release tests.

The archives are built here from the fixture history's files at a commit (the
repository's `python/` prefix dropped, as SGLang's packaging does), with a
large incompressible member standing in for the compiled parts a real wheel
carries. The index is a real HTTP server on loopback implementing the simple
API (PEP 691 JSON and the HTML form), answering range requests or not, and
counting the bytes it sends.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import tarfile
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import gitio
from tests.apiserver import serving

PADDING = 4 << 20  # bytes of incompressible data in each wheel


def package_files(repo, sha: str) -> dict[str, str]:
    """The files under python/ at `sha`, by their path inside the package."""
    listing = repo.git.ls_tree("-r", "--name-only", sha, "--", "python").split()
    revision = gitio.CommitRevision(sha, sha)
    return {path.removeprefix("python/"): gitio.read_file(repo, revision, path)
            for path in listing}  # fmt: skip


def build_wheel(files: dict[str, str], version: str, name: str = "sglang") -> bytes:
    out = io.BytesIO()
    dist = f"{name}-{version}.dist-info"
    record = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as wheel:
        members = {**files, f"{name}/_native.so": os.urandom(PADDING)}
        members[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        members[f"{dist}/WHEEL"] = "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        for path, text in sorted(members.items()):
            data = text if isinstance(text, bytes) else text.encode()
            kind = zipfile.ZIP_STORED if path.endswith(".so") else zipfile.ZIP_DEFLATED
            wheel.writestr(zipfile.ZipInfo(path, (2026, 1, 1, 0, 0, 0)), data, kind)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(data)}")
        wheel.writestr(f"{dist}/RECORD", "\n".join([*record, f"{dist}/RECORD,,"]) + "\n")
    return out.getvalue()


def build_sdist(files: dict[str, str], version: str, name: str = "sglang") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@dataclass
class Served:
    filename: str
    data: bytes
    yanked: str | None = None
    sha256: str | None = None  # what the index lists (default: the true one)


@dataclass
class Index:
    """A simple-API index on loopback serving `files` for project `name`."""

    files: list[Served] = field(default_factory=list)
    name: str = "sglang"
    ranges: bool = True
    html: bool = False
    sent: int = 0  # bytes of archive data sent
    requests: list[str] = field(default_factory=list)  # every path asked for
    login: tuple[str, str] | None = None  # (user, password) every request must carry

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        serving(self.server).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/simple"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def listing(self) -> tuple[bytes, str]:
        entries = []
        for f in self.files:
            sha = f.sha256 or hashlib.sha256(f.data).hexdigest()
            entries.append((f, sha))
        if self.html:
            links = "".join(
                f'<a href="/files/{f.filename}#sha256={sha}"'
                + (f' data-yanked="{f.yanked}"' if f.yanked is not None else "")
                + f">{f.filename}</a><br>\n"
                for f, sha in entries
            )
            return f"<html><body>{links}</body></html>".encode(), "text/html"
        doc = {"meta": {"api-version": "1.1"}, "name": self.name, "files": [
            {"filename": f.filename, "url": f"/files/{f.filename}", "hashes": {"sha256": sha},
             "yanked": f.yanked if f.yanked is not None else False}
            for f, sha in entries]}  # fmt: skip
        return json.dumps(doc).encode(), "application/vnd.pypi.simple.v1+json"


def _handler(index: Index):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with index.lock:
                index.requests.append(self.path)
            if index.login is not None and self.headers.get("Authorization") != _basic(index):
                return self._send(401, b"login required", {"WWW-Authenticate": "Basic"})
            if self.path.rstrip("/") == f"/simple/{index.name}":
                body, kind = index.listing()
                return self._send(200, body, {"Content-Type": kind})
            name = self.path.removeprefix("/files/")
            found = next((f for f in index.files if f.filename == name), None)
            if found is None:
                return self._send(404, b"not found", {})
            wanted = self.headers.get("Range")
            if wanted and index.ranges:
                first, last = _span(wanted, len(found.data))
                part = found.data[first : last + 1]
                with index.lock:
                    index.sent += len(part)
                extra = {"Content-Range": f"bytes {first}-{last}/{len(found.data)}"}
                return self._send(206, part, extra)
            with index.lock:
                index.sent += len(found.data)
            return self._send(200, found.data, {})

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    return Handler


def _basic(index: Index) -> str:
    user, password = index.login
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _span(header: str, size: int) -> tuple[int, int]:
    spec = header.removeprefix("bytes=")
    first, _, last = spec.partition("-")
    if not first:
        return max(0, size - int(last)), size - 1
    return int(first), min(int(last) if last else size - 1, size - 1)

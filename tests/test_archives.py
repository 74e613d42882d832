"""Archives and index pages are hostile data, read within bounds: a zip member is judged by
its declared sizes before a byte of it is inflated and never inflates past them; the
members read from one archive, and an sdist's whole stream, have a total budget; a
malformed sdist is one line. An index on disk is read from regular files only (a FIFO
does not hang, /dev/zero is not read), and a remote page cannot send harness to files
on this machine. Every archive is built here; every index is a real one (on loopback, or
on disk)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import tracemalloc
import zlib
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.releases.archive import MAX_INFLATED, MAX_MEMBER, MemoryZip
from tests.conftest import one_line_error, run_cli
from tests.releases import Index, Served, build_wheel, package_files

TARGET = "sglang/srt/arg_groups/overrides.py"
WHEEL = "sglang-{}-py3-none-any.whl"
ROOT = Path(__file__).resolve().parents[1]


def raw_zip(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip of deflated members (name, deflated bytes, CRC-32, size) whose headers say
    exactly what they are given, true or not."""
    out, directory = io.BytesIO(), io.BytesIO()
    for name, packed, crc, size in members:
        offset, encoded = out.tell(), name.encode()
        fields = (20, 0, 8, 0, 0, crc, len(packed), size, len(encoded), 0)
        out.write(b"PK\x03\x04" + struct.pack("<HHHHHIIIHH", *fields) + encoded + packed)
        central = (20, 20, 0, 8, 0, 0, crc, len(packed), size, len(encoded), 0, 0, 0, 0, 0,
                   offset)  # fmt: skip
        directory.write(b"PK\x01\x02" + struct.pack("<HHHHHHIIIHHHHHII", *central) + encoded)
    start, listing = out.tell(), directory.getvalue()
    out.write(listing)
    end = (0, 0, len(members), len(members), len(listing), start, 0)
    out.write(b"PK\x05\x06" + struct.pack("<HHHHIIH", *end))
    return out.getvalue()


def deflated(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def zeros_deflated(size: int) -> bytes:
    """`size` zero bytes, deflated, without holding them all at once."""
    packer, block, out = zlib.compressobj(9, zlib.DEFLATED, -15), bytes(1 << 20), []
    for _ in range(size >> 20):
        out.append(packer.compress(block))
    return b"".join([*out, packer.flush()])


def peak_of(call) -> tuple[object, int]:
    """What `call()` returns, and the most memory Python held meanwhile, in bytes."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def files(history) -> dict[str, str]:
    from harness import gitio

    repo = gitio.open_repo(history.repo())
    return package_files(repo, gitio.resolve(repo, "#30835").sha)


def test_a_zip_lying_about_a_member_size_is_refused_before_inflating(files, tmp_path):
    """200 MB of deflated spaces declared as the file's own size: no more than that size
    (and one byte) is ever inflated."""
    genuine = files[TARGET.removeprefix("python/")].encode()
    bomb = zeros_deflated(200 << 20)
    path = tmp_path / WHEEL.format("0.3.0")
    path.write_bytes(raw_zip([(TARGET, bomb, zlib.crc32(genuine), len(genuine))]))
    assert path.stat().st_size < 1 << 20
    result, peak = peak_of(lambda: run_cli("diff", f"wheel:{path}", f"wheel:{path}", "--no-cache"))
    line = one_line_error(result)
    assert TARGET in line and "CRC or size" in line
    assert peak < 64 << 20, peak  # the bomb would be 200 MB


def test_a_member_declared_over_the_cap_is_refused_unread(tmp_path):
    small = deflated(b"x = 1\n")
    path = tmp_path / WHEEL.format("0.3.0")
    path.write_bytes(raw_zip([(TARGET, small, zlib.crc32(b"x = 1\n"), MAX_MEMBER + 1)]))
    line = one_line_error(run_cli("diff", f"wheel:{path}", f"wheel:{path}", "--no-cache"))
    assert TARGET in line and f"larger than {MAX_MEMBER >> 20} MB" in line


def test_the_members_read_from_one_archive_have_a_total_budget():
    """Members of MAX_MEMBER zero bytes each: as many as the budget holds are read whole,
    the next is refused before it is inflated: its bytes are no deflate stream at all,
    so inflating them would be another error than the budget's."""
    packed, crc = zeros_deflated(MAX_MEMBER), zlib.crc32(bytes(MAX_MEMBER))
    fits = MAX_INFLATED // MAX_MEMBER
    names = [f"sglang/m{n}.py" for n in range(fits + 1)]
    members = [(n, packed, crc, MAX_MEMBER) for n in names[:fits]]
    members.append((names[fits], b"\xff not deflate", crc, MAX_MEMBER))
    archive = MemoryZip(raw_zip(members), "bomb.whl")
    for name in names[:fits]:
        assert archive.read(name) == bytes(MAX_MEMBER)
    with pytest.raises(HarnessError, match=f"more than {MAX_INFLATED >> 20} MB together"):
        archive.read(names[fits])


def tarball(members: dict[str, bytes | int], level: int = 1) -> bytes:
    """A .tar.gz of `members`: bytes as given, an int as that many zero bytes."""
    out = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=out, mode="wb", compresslevel=level, mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w|") as tar,
    ):
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = data if isinstance(data, int) else len(data)
            source = _Zeros(data) if isinstance(data, int) else io.BytesIO(data)
            tar.addfile(info, source)
    return out.getvalue()


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


def test_an_sdist_bomb_is_refused_within_its_budget(tmp_path):
    """Members each under the per-member cap, more than the budget together."""
    each = MAX_MEMBER - 1
    count = MAX_INFLATED // each + 2
    path = tmp_path / "sglang-0.1.0.tar.gz"
    path.write_bytes(tarball({f"sglang-0.1.0/sglang/m{n}.py": each for n in range(count)}))
    result, peak = peak_of(lambda: run_cli("diff", f"sdist:{path}", f"sdist:{path}",
                                           "--no-cache"))  # fmt: skip
    line = one_line_error(result)
    assert f"more than {MAX_INFLATED >> 20} MB" in line and path.name in line
    assert peak < MAX_INFLATED + (64 << 20), peak  # not count * each


@pytest.mark.parametrize(
    "data",
    [
        os.urandom(4096),
        gzip.compress(b"this is not a tar file at all\n" * 100),
        tarball({"sglang-0.1.0/sglang/a.py": os.urandom(1 << 16).hex().encode()})[: 1 << 15],
        b"\x1f\x8b" + os.urandom(200),
        b"BZh9" + os.urandom(200),
    ],
    ids=["random", "gzip-of-text", "truncated", "bad-gzip", "bad-bzip2"],
)
def test_a_malformed_sdist_is_one_line(tmp_path, data):
    path = tmp_path / "sglang-0.1.0.tar.gz"
    path.write_bytes(data)
    line = one_line_error(run_cli("diff", f"sdist:{path}", f"sdist:{path}", "--no-cache"))
    assert path.name in line and "not a readable sdist" in line


def cli_with_deadline(*argv: str, seconds: float = 60) -> subprocess.CompletedProcess:
    """`harness ARGV` in a process of its own, so that a hang fails the test, not the run."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "HARNESS_HTTP_TIMEOUT": "5"}
    return subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True,
                          text=True, timeout=seconds, env=environment)  # fmt: skip


def index_on_disk(tmp_path: Path, links: list[tuple[str, str]]) -> Path:
    """A file: index whose sglang page links `(file name, href)`."""
    project = tmp_path / "simple" / "sglang"
    project.mkdir(parents=True)
    anchors = "".join(f'<a href="{href}">{name}</a>\n' for name, href in links)
    (project / "index.html").write_text(f"<html><body>{anchors}</body></html>")
    return tmp_path / "simple"


def test_a_fifo_as_an_index_page_does_not_hang(tmp_path):
    project = tmp_path / "simple" / "sglang"
    project.mkdir(parents=True)
    os.mkfifo(project / "index.html")
    done = cli_with_deadline("diff", "pypi:sglang==0.2.0", "pypi:sglang==0.2.0", "--index-url",
                             (tmp_path / "simple").as_uri(), "--no-cache")  # fmt: skip
    assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("what", ["page", "wheel"])
def test_an_index_on_disk_cannot_have_dev_zero_read(tmp_path, what):
    """The project's page, or the wheel it links, is a symlink to /dev/zero."""
    name = WHEEL.format("0.2.0")
    if what == "page":
        project = tmp_path / "simple" / "sglang"
        project.mkdir(parents=True)
        (project / "index.html").symlink_to("/dev/zero")
        simple = tmp_path / "simple"
    else:
        (tmp_path / "files").mkdir()
        (tmp_path / "files" / name).symlink_to("/dev/zero")
        simple = index_on_disk(tmp_path, [(name, f"../../files/{name}")])
    done = cli_with_deadline("diff", "pypi:sglang==0.2.0", "pypi:sglang==0.2.0", "--index-url",
                             simple.as_uri(), "--no-cache", seconds=30)  # fmt: skip
    assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_a_local_archive_that_is_a_device_or_a_fifo_is_one_line(tmp_path, kind):
    fifo = tmp_path / "sglang-0.1.0.tar.gz"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        done = cli_with_deadline("diff", f"{kind}:{path}", f"{kind}:{path}", "--no-cache",
                                 seconds=30)  # fmt: skip
        assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_a_remote_index_cannot_send_harness_to_local_files(files, tmp_path):
    """A JSON page listing 0.2.0 at file: URLs (a planted wheel of other code, /dev/zero):
    neither is read; with no http(s) file left for 0.2.0, the release is not found."""
    planted = tmp_path / WHEEL.format("0.2.0")
    planted.write_bytes(build_wheel(files, "0.2.0"))
    served = Index([])
    listing = {"meta": {"api-version": "1.1"}, "name": "sglang", "files": [
        {"filename": WHEEL.format("0.2.0"), "url": planted.as_uri(),
         "hashes": {"sha256": hashlib.sha256(planted.read_bytes()).hexdigest()}},
        {"filename": "sglang-0.2.0.tar.gz", "url": "file:///dev/zero", "hashes": {}},
        {"filename": WHEEL.format("0.3.0"), "url": "/files/x.whl", "hashes": {}},
    ]}  # fmt: skip
    served.listing = lambda: (json.dumps(listing).encode(), "application/vnd.pypi.simple.v1+json")
    try:
        done = cli_with_deadline("diff", "pypi:sglang==0.2.0", "pypi:sglang==0.2.0",
                                 "--index-url", served.url, "--no-cache", seconds=30)  # fmt: skip
    finally:
        served.close()
    assert done.returncode == 2, done.stderr
    assert "no file of version 0.2.0" in done.stderr and "0.3.0" in done.stderr


def test_a_served_wheel_of_the_right_files_still_reads(files):
    """The bounds leave an honest wheel alone (the same one, served by ranges)."""
    served = Index([Served(WHEEL.format("0.3.0"), build_wheel(files, "0.3.0"))])
    try:
        result = run_cli("diff", "pypi:sglang==0.3.0", "pypi:sglang==0.3.0", "--index-url",
                         served.url, "--no-cache")  # fmt: skip
    finally:
        served.close()
    assert result.code == 0, result.err

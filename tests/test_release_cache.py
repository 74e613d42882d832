"""A mirror cannot poison the release cache: after an index served another release's bytes
for a file (by ranges, or whole under the sha256 of what it served), the genuine index
with the same cache gives the genuine answer; a cache entry whose bytes were changed on
disk is read again from the archive. The expected answers come from the oracle (the
predicate of CONTEXT.md), never from a run of harness."""

from __future__ import annotations

import hashlib
import itertools
import json
import zlib
from pathlib import Path

import pytest

from harness import gitio
from tests import oracle
from tests.conftest import run_cli
from tests.releases import Index, Served, build_wheel, package_files

WHEEL = "sglang-{}-py3-none-any.whl"
TARGET = "sglang/srt/arg_groups/overrides.py"


@pytest.fixture(scope="module")
def sources(history) -> dict[str, dict[str, str]]:
    """The package's files at 0.2.0 (before #30835) and 0.3.0 (#30835)."""
    repo = gitio.open_repo(history.repo())
    return {v: package_files(repo, gitio.resolve(repo, rev).sha)
            for v, rev in (("0.2.0", "#30835^"), ("0.3.0", "#30835"))}  # fmt: skip


@pytest.fixture(scope="module")
def wheels(sources) -> dict[str, bytes]:
    """0.2.0 and 0.3.0 (0.3.0's page_size changes, per the oracle)."""
    return {v: build_wheel(f, v) for v, f in sources.items()}


def genuine_index(wheels: dict[str, bytes], ranges: bool = True) -> Index:
    return Index([Served(WHEEL.format(v), data) for v, data in wheels.items()], ranges=ranges)


def diff(index: Index, cache: Path) -> tuple[int, dict]:
    result = run_cli("diff", "pypi:sglang==0.2.0", "pypi:sglang==0.3.0", "--index-url",
                     index.url, "--cache-dir", str(cache), "--format", "json")  # fmt: skip
    assert result.code in (0, 1), result.err
    return result.code, json.loads(result.out)


def changed_cells(report: dict) -> dict:
    return {oracle.key(i["cell"]): (i["base"]["page_size"], i["head"]["page_size"])
            for i in report["changed"]}  # fmt: skip


def assert_genuine(code: int, report: dict) -> None:
    expected = oracle.changed_between(False, True)
    assert expected and code == 1 and changed_cells(report) == expected


@pytest.mark.parametrize("listed", ["genuine", "served"])
def test_a_mirror_serving_another_release_by_ranges_poisons_nothing(wheels, tmp_path, listed):
    """The mirror serves 0.3.0's bytes as 0.2.0, listing 0.2.0's own sha256 (which ranges
    never check) or the sha256 of what it serves."""
    cache = tmp_path / "cache"
    liar = {"genuine": hashlib.sha256(wheels["0.2.0"]).hexdigest(),
            "served": hashlib.sha256(wheels["0.3.0"]).hexdigest()}[listed]  # fmt: skip
    mirror = Index([Served(WHEEL.format("0.2.0"), wheels["0.3.0"], sha256=liar),
                    Served(WHEEL.format("0.3.0"), wheels["0.3.0"])])  # fmt: skip
    try:
        code, report = diff(mirror, cache)
    finally:
        mirror.close()
    assert code == 0 and report["changed"] == []  # the mirror's answer: the same file twice
    genuine = genuine_index(wheels)
    try:
        assert_genuine(*diff(genuine, cache))
    finally:
        genuine.close()


def test_a_mirror_serving_another_release_whole_poisons_nothing(wheels, tmp_path):
    """Without ranges the whole file is checked: listed with 0.2.0's sha256 it is refused;
    listed with its own, it is kept under that sha256, which the genuine index never lists
    for 0.2.0."""
    cache = tmp_path / "cache"
    genuine_sha, served_sha = (hashlib.sha256(wheels[v]).hexdigest() for v in ("0.2.0", "0.3.0"))
    for sha in (genuine_sha, served_sha):
        mirror = Index([Served(WHEEL.format("0.2.0"), wheels["0.3.0"], sha256=sha),
                        Served(WHEEL.format("0.3.0"), wheels["0.3.0"])], ranges=False)  # fmt: skip
        try:
            result = run_cli("diff", "pypi:sglang==0.2.0", "pypi:sglang==0.3.0", "--index-url",
                             mirror.url, "--cache-dir", str(cache))  # fmt: skip
        finally:
            mirror.close()
        assert result.code == (2 if sha == genuine_sha else 0), result.err
    genuine = genuine_index(wheels, ranges=False)
    try:
        assert_genuine(*diff(genuine, cache))
    finally:
        genuine.close()


def cached_members(cache: Path, name: str) -> list[Path]:
    return [p for p in (cache / "releases").rglob(name) if {"members", "ranged"} & set(p.parts)]


@pytest.mark.parametrize("ranges", [True, False], ids=["ranges", "whole"])
def test_a_cached_member_changed_on_disk_is_read_again(wheels, tmp_path, ranges):
    """Every cached copy of the target file is overwritten with the other release's: each
    fails its check when read back, and is read again from the index."""
    cache = tmp_path / "cache"
    index = genuine_index(wheels, ranges)
    try:
        assert_genuine(*diff(index, cache))
        entries = cached_members(cache, "overrides.py")
        assert len(entries) == 2  # one per release
        other = {e: entries[1 - n].read_bytes() for n, e in enumerate(entries)}
        for entry, data in other.items():
            entry.write_bytes(data)
        assert_genuine(*diff(index, cache))
        assert sorted(e.read_bytes() for e in entries) == sorted(other.values())  # restored
    finally:
        index.close()


def test_a_directory_is_kept_only_under_a_checked_sha256(wheels, tmp_path):
    """By ranges, nothing is kept under the sha256 the index lists but the members, each
    under its CRC and size; a whole download keeps the directory under it."""
    cache = tmp_path / "cache"
    index = genuine_index(wheels, ranges=True)
    try:
        diff(index, cache)
        assert list((cache / "releases").rglob("directory.json")) == []
        index.ranges = False
        diff(index, cache)
    finally:
        index.close()
    kept = {p.parent.name for p in (cache / "releases").rglob("directory.json")}
    assert kept == {hashlib.sha256(w).hexdigest() for w in wheels.values()}


def crc_suffix(prefix: bytes, target: int) -> bytes:
    """The 4 bytes that, after `prefix`, give CRC-32 `target` (CRC-32 is affine over GF(2):
    the 32 bits of the suffix are solved for by elimination)."""
    zeros = bytes(len(prefix))
    base = zlib.crc32(zeros + bytes(4))
    basis: dict[int, tuple[int, int]] = {}  # leading bit -> (CRC difference, suffix bits)
    for bit in range(32):
        value, combo = zlib.crc32(zeros + (1 << bit).to_bytes(4, "little")) ^ base, 1 << bit
        while value and value.bit_length() - 1 in basis:
            known, known_combo = basis[value.bit_length() - 1]
            value, combo = value ^ known, combo ^ known_combo
        if value:
            basis[value.bit_length() - 1] = (value, combo)
    want, suffix = target ^ zlib.crc32(prefix + bytes(4)), 0
    while want:
        known, known_combo = basis[want.bit_length() - 1]
        want, suffix = want ^ known, suffix ^ known_combo
    return suffix.to_bytes(4, "little")


def forged(genuine: bytes) -> bytes:
    """Python code of other behavior (FA4 pages of 64) with `genuine`'s CRC-32 and size: the
    edited file, a comment padding it, and 4 solved bytes that read as text in the comment."""
    edited = genuine.replace(b"FA4_PAGE_SIZE = 128", b"FA4_PAGE_SIZE = 64").replace(
        b"FA4 on Blackwell datacenter GPUs reads the KV cache in 128-token pages.", b"Forged."
    )
    assert len(edited) < len(genuine) - 20
    for letters in itertools.product(b"abcdefghij", repeat=4):
        filler = bytes(letters).ljust(len(genuine) - len(edited) - 7, b" ")
        prefix = edited + b"\n# " + filler
        tail = crc_suffix(prefix, zlib.crc32(genuine))
        if all(32 <= c < 127 for c in tail):
            return prefix + tail
    raise AssertionError("no printable suffix found")


def test_a_forged_member_of_the_same_crc_from_one_mirror_never_serves_another(
    sources, wheels, tmp_path
):
    """A mirror serves a 0.2.0 whose target file is other code with the genuine file's
    CRC-32 and size (its directory says nothing wrong): what it gave by ranges is kept for
    its own URL, and the genuine index reads the genuine file."""
    genuine = sources["0.2.0"][TARGET].encode()
    fake = forged(genuine)
    assert len(fake) == len(genuine) and zlib.crc32(fake) == zlib.crc32(genuine)
    lying = build_wheel({**sources["0.2.0"], TARGET: fake.decode()}, "0.2.0")
    cache = tmp_path / "cache"
    mirror = Index([Served(WHEEL.format("0.2.0"), lying,
                           sha256=hashlib.sha256(wheels["0.2.0"]).hexdigest()),
                    Served(WHEEL.format("0.3.0"), wheels["0.3.0"])])  # fmt: skip
    try:
        _, report = diff(mirror, cache)
    finally:
        mirror.close()
    assert changed_cells(report) != oracle.changed_between(False, True)  # the forgery bit
    genuine_index_ = genuine_index(wheels)
    try:
        assert_genuine(*diff(genuine_index_, cache))
    finally:
        genuine_index_.close()

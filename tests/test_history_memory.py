"""`history`'s memory does not grow with the number of commits it scans.

What a scan must hold is bounded by constants (the commits in flight, the states a
run remembers); the commits git lists are streamed from its pipe, never held as a
list, nor is git's whole output. With those constants made small, a real history
of 1,500 commits peaks at what one of 300 does, within PER_COMMIT bytes a commit
(holding the list of commits, as the scan once did, is about 700). Measured with
tracemalloc around the real CLI, in-process (bench/bench_history.py --memory
measures the processes' resident memory, git's included, at 20,000 commits).
"""

from __future__ import annotations

import gc
import io
import subprocess
import tracemalloc
from pathlib import Path

import pytest

from harness import gitio
from harness.scan import history, versions
from tests.conftest import run_cli
from tests.helpers import plain_matrix

PATH = "pkg/overrides.py"
PER_COMMIT = 300  # bytes of growth per commit allowed (a list of the commits: 700)


def version(n: int) -> str:
    """The target, and a constant that every commit changes (the target never does),
    to one of 16 values: the parsed pieces a run keeps by text are the same 16 for any
    length (their bound, 2,048, is past both histories)."""
    return (f'def target(view):\n    return {{"page_size": 64}} if view.backend == "fa4" '
            f'else {{}}\n\n\nTUNED = {n % 16}\n')  # fmt: skip


def build(root: Path, commits: int) -> Path:
    """A repository of `commits` commits, streamed into `git fast-import`."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    stream = b"".join(
        b"commit refs/heads/main\ncommitter Fixture <f@harness.invalid> %d +0000\n"
        % (1_760_000_000 + 3600 * n)
        + b"data %d\nTune %d\n" % (len(b"Tune %d" % n) + 1, n)
        + b"M 100644 inline %s\ndata %d\n%s\n"
        % (PATH.encode(), len(version(n).encode()), version(n).encode())
        for n in range(commits)
    )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=stream, check=True)
    return root


def peak(repo: Path, matrix: Path) -> int:
    """The most memory Python held while `harness history` ran over `repo`."""
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    result = run_cli("history", "--repo", str(repo), "--matrix", str(matrix), "--format",
                     "json")  # fmt: skip
    assert result.code == 0, result.err
    assert f'"considered": {int(repo.name)}' in result.out
    return tracemalloc.get_traced_memory()[1] - before


@pytest.fixture
def small_bounds(monkeypatch):
    """The scan's own bounds, made small enough for both histories to reach them; and
    Python's own collector thresholds: the test processes collect cycles every 20,000
    allocations (tests/conftest.py), and the cycles waiting for it count in a peak."""
    monkeypatch.setattr(versions, "REMEMBERED", 32)
    monkeypatch.setattr(history, "AHEAD", 8)
    kept = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*kept)


def test_history_memory_does_not_grow_with_its_length(tmp_path, small_bounds):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(plain_matrix("memory", PATH), encoding="utf-8")
    short, long = build(tmp_path / "300", 300), build(tmp_path / "1500", 1500)
    tracemalloc.start()
    try:
        peak(short, matrix)  # the first run pays for what a process loads once
        low, high = peak(short, matrix), peak(long, matrix)
    finally:
        tracemalloc.stop()
    assert (high - low) / 1200 < PER_COMMIT, (low, high)


class Counted(io.BytesIO):
    """A stream that counts what was read of it, in pieces of at most 1,000 bytes (as a
    pipe gives what is there)."""

    taken = 0

    def read1(self, size: int = -1) -> bytes:
        found = super().read1(min(size, 1000) if size > 0 else 1000)
        self.taken += len(found)
        return found


def test_gits_listing_is_read_as_it_comes_never_whole():
    fields = [b"%d" % n for n in range(200_000)] + [b"s" * 3_000_000, b"last"]
    out = Counted(b"\0".join(fields))
    reader = gitio.Fields(out)
    assert reader.take() == b"0" and out.taken <= gitio.Fields.CHUNK
    taken = [reader.take() for _ in fields[1:]]
    assert taken == fields[1:] and reader.take() is None

"""Where the suite's own files go (tests/conftest.py): a memory filesystem when one fits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import MEMORY_ROOT, memory_root_fits


def _mounted_as(path: str) -> str | None:
    """The filesystem type /proc/self/mounts gives the mount point `path`, if any."""
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[1] == path:
                return fields[2]
    return None


def test_a_directory_that_is_no_mount_of_its_own_or_missing_does_not_fit(tmp_path):
    assert not memory_root_fits(str(tmp_path))  # a directory inside a filesystem
    assert not memory_root_fits(str(tmp_path / "missing"))


@pytest.mark.skipif(not os.path.exists("/proc/self/mounts"), reason="no /proc on this system")
def test_the_memory_root_fits_exactly_when_it_is_a_writable_tmpfs_with_room():
    if _mounted_as(MEMORY_ROOT) != "tmpfs":
        assert not memory_root_fits(MEMORY_ROOT)
        return
    found = os.statvfs(MEMORY_ROOT)
    room = found.f_bavail * found.f_frsize >= 4 << 30
    runs = not found.f_flag & (os.ST_NOEXEC | os.ST_RDONLY)
    assert memory_root_fits(MEMORY_ROOT) == (room and runs and os.access(MEMORY_ROOT, os.W_OK))


def test_each_worker_writes_where_the_run_chose(tmp_path):
    """The controller chose the root; an xdist worker's tmp_path lies inside it."""
    chosen = os.environ.get("PYTEST_DEBUG_TEMPROOT")
    if chosen is None:
        pytest.skip("this run was given no memory root (none fits, or --basetemp was given)")
    assert Path(chosen).resolve() in tmp_path.resolve().parents

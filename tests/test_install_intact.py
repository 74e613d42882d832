"""The test suite leaves the install whole: no process under a file-size limit writes
bytecode.

A `.pyc` is written in one `write` to a temporary file, then renamed into place.
Under RLIMIT_FSIZE that write is cut short without an error, so the rename puts a
truncated file where the next import reads it (`EOFError: marshal data too short`, in
every later run of the editable install). The suite's limited runs therefore write no
bytecode (`tests.test_robustness.file_size_limited`), nor does the evaluation worker.
Both are shown on a copy of the package whose `__pycache__` starts empty, so the shared
install is never put at risk here.
"""

from __future__ import annotations

import importlib.util
import marshal
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.engine.limits import Limits
from harness.engine.worker import isolated
from tests.test_robustness import file_size_limited
from tests.unit.engine.test_worker import as_is, header_only

PACKAGE = Path(__file__).resolve().parents[1] / "harness"
HEADER = 16  # a .pyc's header: magic, flags, source mtime and size


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A directory holding a copy of the harness package without any bytecode."""
    shutil.copytree(PACKAGE, tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.fixture(autouse=True)
def no_ambient_setting(monkeypatch):
    """The setting must come from the suite's helper, not from the shell that ran pytest."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)


def run_limited(copy: Path, limit: int, allow_bytecode: bool = False):
    """`harness diff --help` (it imports every command) from the copy, started as the
    suite starts its limited runs; `allow_bytecode` takes the helper's setting away."""
    kwargs = file_size_limited(limit)
    if allow_bytecode:
        del kwargs["env"]["PYTHONDONTWRITEBYTECODE"]
    kwargs["env"]["PYTHONPATH"] = str(copy)
    argv = [sys.executable, "-m", "harness", "diff", "--help"]
    return subprocess.run(argv, capture_output=True, text=True, cwd=copy, **kwargs)


def bytecode(copy: Path) -> list[Path]:
    return sorted((copy / "harness").rglob("*.pyc"))


def loads(pyc: Path) -> bool:
    """Whether the .pyc holds a whole code object after its header."""
    data = pyc.read_bytes()
    if data[:4] != importlib.util.MAGIC_NUMBER:
        return False
    try:
        marshal.loads(data[HEADER:])
    except (EOFError, ValueError, TypeError):
        return False
    return True


def test_a_run_under_a_file_size_limit_writes_no_bytecode(copy):
    done = run_limited(copy, 100)
    assert done.returncode == 0, done.stderr
    assert "usage: harness diff" in done.stdout
    assert bytecode(copy) == []


def test_without_the_setting_the_same_run_leaves_truncated_bytecode(copy):
    """The hazard the setting removes is real: with bytecode allowed, the limited run
    puts .pyc files into the package that no import can read."""
    done = run_limited(copy, 100, allow_bytecode=True)
    assert done.returncode == 0, done.stderr
    written = bytecode(copy)
    assert written, "the copy was imported and wrote bytecode"
    assert any(not loads(pyc) for pyc in written)
    assert all(pyc.stat().st_size <= 100 for pyc in written)


def bytecode_setting() -> bool:
    return sys.dont_write_bytecode


def test_the_evaluation_worker_writes_no_bytecode(monkeypatch):
    """The worker runs under RLIMIT_FSIZE too: it turns bytecode off before running
    anything, whatever the harness process was started with."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    flag = isolated(bytecode_setting, as_is, header_only, Limits(seconds=1.0, memory=1 << 30))
    assert flag is True
    assert sys.dont_write_bytecode is False  # the parent's own setting is left alone

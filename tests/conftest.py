from __future__ import annotations

import contextlib
import functools
import gc
import io
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests  # noqa: F401  (see below)
from hypothesis import settings

from harness import http
from harness.cli.main import main
from harness.testing.sglang_fixture import build_history
from tests.helpers import check_json_reports

# pytester restores sys.modules after each of its tests, dropping the modules the test
# imported first. harness.http imports requests on first use; dropped and imported
# again half-way, requests fails its own isinstance checks ("You can only merge into
# CookieJar") in whichever test comes next in the same process (`-n 0`). Imported
# here, it is in every snapshot.

# A shell that starts pytest in the background (`pytest ... &` in a script) hands it
# SIGINT ignored, and every process a test starts would inherit that: the tests that
# interrupt a harness run would see it carry on. Their children get the default back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# No Hypothesis deadline: a property's example may take 445 ms on a busy 2-core machine
# (as the README's test command runs beside other work), and a test fails on what it
# finds, never on how fast it ran (speed is the benchmarks' to measure: bench/).
settings.register_profile("harness", deadline=None)
settings.load_profile("harness")

# The cyclic garbage collector, set for a long test process. By default it scans the
# young objects every 700 allocations and the whole heap (every test module, the fixture
# histories, Hypothesis's state) every 100th time: 17.5 s of a worker's 200 s went
# there (timed with gc.callbacks, 2026-12-04). Scanning every 20,000 allocations, with
# what stands after collection frozen out of every later scan: 3 to 5 s.
gc.set_threshold(20_000, 20, 20)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()


# Where the tests' files go. A run writes about 600 MB in 99,000 files (about 950 git
# repositories among them) and deletes each test's as it passes; on this project's 2-core
# machines /tmp is a disk, and a run on a memory filesystem took 191 and 202 s where the
# same code on the disk took 217 and 239 s, taking turns (the kernel's share of the CPU
# fell by a third: docs/testing.md). So pytest's temporary root (PYTEST_DEBUG_TEMPROOT,
# pytest's own setting) is /dev/shm where that is a memory filesystem with room and lets
# the tests run what they install there (a virtual environment's scripts); anywhere else,
# or with --basetemp or the variable given, pytest's default stands.
MEMORY_ROOT = "/dev/shm"
MEMORY_ROOM = 4 << 30  # bytes free there, at least


def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp or "PYTEST_DEBUG_TEMPROOT" in os.environ:
        return
    if hasattr(config, "workerinput"):  # an xdist worker: the controller chose its root
        return
    if memory_root_fits(MEMORY_ROOT):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = MEMORY_ROOT


def memory_root_fits(path: str) -> bool:
    """Whether `path` is a memory filesystem (tmpfs) of its own that this user may write,
    that runs what is stored there and has MEMORY_ROOM free."""
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            memory = any(line.split()[1:3] == [path, "tmpfs"] for line in mounts)
        found = os.statvfs(path)
    except OSError:
        return False
    runs = not found.f_flag & os.ST_NOEXEC and not found.f_flag & os.ST_RDONLY
    roomy = found.f_bavail * found.f_frsize >= MEMORY_ROOM
    return memory and runs and roomy and os.access(path, os.W_OK | os.X_OK)


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(*argv: str) -> Result:
    """Run `harness ARGV` in-process, capturing its output (argparse exits count too)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    check_json_reports(argv, code, out.getvalue())  # every JSON report, against the schema
    return Result(code, out.getvalue(), err.getvalue())


@functools.cache
def cli_once(*argv: str) -> Result:
    """`run_cli(*argv)`, run once a process: a report many tests read, made on a repository
    no test modifies (the session's fixture history). Its text is shared: read, never
    changed."""
    return run_cli(*argv)


@dataclass
class History:
    root: Path
    shas: dict[str, str]

    def repo(self) -> str:
        return str(self.root)


@pytest.fixture(scope="session")
def history(tmp_path_factory) -> History:
    """The fixture SGLang history (built once per test worker; never modified)."""
    root = tmp_path_factory.mktemp("history") / "sglang"
    return History(root, build_history(root))


@pytest.fixture
def clone(history: History, tmp_path: Path) -> Path:
    """A private clone of the fixture history, for tests that dirty the working tree."""
    target = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(history.root), str(target)], check=True)
    return target


def git_out(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def one_line_error(result: Result) -> str:
    """Assert the result is a user error: exit 2, one stderr line, no traceback."""
    assert result.code == 2, (result.code, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    return lines[0]


@pytest.fixture
def no_retry_pauses(monkeypatch) -> None:
    """HTTP retries without their pauses (0.5 s, 1 s, 2 s): for tests of what a refusal
    says, not of when it is retried."""
    monkeypatch.setattr(http, "BACKOFF", 0.01)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch) -> Path:
    """Each test's default cache is its own directory, never the user's ~/.cache."""
    directory = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory / "harness"


TOKEN = "ghp-test-secret-token-0123456789"


@pytest.fixture
def github_api(monkeypatch):
    """A loopback GitHub API; the harness finds it through GITHUB_API_URL, as in Actions."""
    from tests.apiserver import FakeGitHub

    with FakeGitHub() as fake:
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        yield fake


def rev_sha(revision: dict) -> dict:
    """A JSON report's revision, as the user named it and as it resolved."""
    return {"rev": revision["rev"], "sha": revision["sha"]}


pytest_plugins = ["pytester"]  # runs pytest itself, for the pytest entry point tests

"""Signals and what a killed run leaves behind.

SIGTERM and SIGHUP end a run as Ctrl-C does: one line, exit 130, and no
temporary file beside an output. Temporary files an earlier run could not
remove (a SIGKILL) are swept from the cache once they are an hour old. Every
signal is a real one, sent to a real `harness` process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.scan.cache import STALE_AFTER
from tests.helpers import commit_versions
from tests.test_hostile import BASE, MATRIX
from tests.test_robustness import _children

HARNESS = [sys.executable, "-m", "harness"]

# `harness`, whose fsync (the last step of a file's atomic write, when its temporary file
# is written and not yet renamed) first sends the process SIGNAL, a real signal to itself.
SIGNALLED_AT_FSYNC = """\
import os, signal, sys, time
def fsync(fd):
    os.kill(os.getpid(), signal.{name})
    time.sleep(30)
os.fsync = fsync
from harness.cli.main import console_main
sys.exit(console_main())
"""


def two_versions(tmp_path: Path, second: str) -> tuple[list[str], Path]:
    shas = commit_versions(tmp_path / "repo", [BASE.format(marker=""), second])
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX)
    return shas, matrix


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_termination_signal_is_an_interrupt_one_line_exit_130(tmp_path, signum):
    forever = BASE.format(marker="") + "\ndef slow(view):\n    while True:\n        pass\n"
    forever = forever.replace("def target(view):\n", "def target(view):\n    slow(view)\n", 1)
    shas, matrix = two_versions(tmp_path, forever)
    run = subprocess.Popen([*HARNESS, "diff", *shas, "--repo", str(tmp_path / "repo"),
                            "--matrix", str(matrix), "--cache-dir", str(tmp_path / "cache"),
                            "--time-limit", "60"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 30
    while not _children(run.pid) and time.monotonic() < deadline:  # evaluating, in a worker
        time.sleep(0.1)
    time.sleep(0.3)
    run.send_signal(signum)
    assert run.wait(timeout=20) == 130
    name = signal.Signals(signum).name
    assert run.stderr.read().strip() == f"harness: interrupted ({name})"
    left = [p for p in (tmp_path / "cache").rglob("*") if ".tmp-" in p.name]
    assert left == []


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_signal_while_the_baseline_is_written_leaves_the_old_one_and_no_temporary(tmp_path, name):
    shas, matrix = two_versions(tmp_path, BASE.format(marker="changed"))
    baseline = tmp_path / "out" / "baseline.json"
    baseline.parent.mkdir()
    baseline.write_text("the old baseline")
    done = subprocess.run([sys.executable, "-c", SIGNALLED_AT_FSYNC.format(name=name),
                           "snapshot", shas[1], "-o", str(baseline), "--repo",
                           str(tmp_path / "repo"), "--matrix", str(matrix), "--no-cache"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert done.stderr.startswith("harness: interrupted")
    assert baseline.read_text() == "the old baseline"
    assert os.listdir(baseline.parent) == ["baseline.json"]


def test_stale_temporary_files_in_the_cache_are_swept_fresh_ones_kept(tmp_path):
    shas, matrix = two_versions(tmp_path, BASE.format(marker="changed"))
    cache = tmp_path / "cache"
    now = time.time()
    planted = {
        "tables/ab/.k1.bin.tmp-0a1b2c3d": now - STALE_AFTER - 60,  # stale: swept
        "releases/x/y/.member.tmp-00000000": now - 10 * STALE_AFTER,  # stale, deeper
        "tables/cd/.k2.bin.tmp-4e5f6a7b": now - 5,  # a live writer's: kept
        "tables/ab/keep.bin": now - 10 * STALE_AFTER,  # not a temporary: kept
    }
    for name, stamp in planted.items():
        path = cache / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"partial")
        os.utime(path, (stamp, stamp))
    done = subprocess.run([*HARNESS, "diff", *shas, "--repo", str(tmp_path / "repo"),
                           "--matrix", str(matrix), "--cache-dir", str(cache), "--format",
                           "json"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr  # the marker is not in the target's closure
    assert json.loads(done.stdout)["changed"] == []
    written = [p for p in (cache / "tables").rglob("*.bin") if p.name != "keep.bin"]
    assert written  # the run wrote to the cache: the sweep ran
    present = {name for name in planted if (cache / name).exists()}
    assert present == {"tables/cd/.k2.bin.tmp-4e5f6a7b", "tables/ab/keep.bin"}

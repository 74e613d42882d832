"""The progress bar: drawn on a terminal, absent from a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
import sys


def run_history(repo: str, stderr) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", "history", "--repo", repo, "--no-cache"],
        stdout=subprocess.PIPE,
        stderr=stderr,
        check=False,
    )


def test_history_draws_a_bar_on_a_terminal(history):
    leader, follower = pty.openpty()
    try:
        done = run_history(history.repo(), follower)
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    assert done.returncode == 1
    assert b"history [" in drawn and b"10/10" in drawn  # the commits history considers
    assert b"[" not in done.stdout.split(b"\n")[0]  # the bar never reaches stdout


def test_history_draws_nothing_into_a_pipe(history):
    done = run_history(history.repo(), subprocess.PIPE)
    assert done.returncode == 1 and done.stderr == b""

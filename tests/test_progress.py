"""Progress and --quiet: a bar on a terminal for every long command; nothing into a pipe or
with --quiet, and the report the same either way."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli.main import build_parser, main
from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli

FA4_CELL = ["--where", "attention_backend=fa4", "--where", "decode_attention_backend=null",
            "--where", "prefill_attention_backend=null", "--where", "use_mla=false",
            "--where", "speculative_eagle_topk=null", "--where", "prefill_cuda_graph=full",
            "--where", "platform=sm100", "--where", "page_size=16"]  # fmt: skip

# Each command that can run past 2 s on a real tree, on the fixture history; a stage its
# progress line shows.
LONG = {
    "diff": (["diff", "#30835^", "#30835", "--format", "json"], b"diff: "),
    "diff --matrix inferred": (
        ["diff", "#30835^", "#30835", "--matrix", "inferred", "--format", "json"],
        b"diff: inferring the matrix",
    ),
    "history": (["history", "--format", "json"], b"history ["),
    "bisect": (["bisect", "#30835^", "#30835"], b"bisect: "),
    "explain": (["explain", "#30835", *FA4_CELL, "--format", "json"], b"explain: "),
    "passes": (["passes", "--format", "json"], b"passes: "),
    "matrix --infer": (
        ["matrix", "--infer", "#30835", "--passes", "_fa4_page_constraint"],
        b"matrix --infer: ",
    ),
    "snapshot": (["snapshot", "#30835"], b"snapshot: "),
}


@dataclass
class Run:
    code: int
    out: bytes  # stdout, always a pipe
    drawn: bytes  # what reached stderr (a terminal, or a pipe)


def run_harness(argv: list[str], repo: str, terminal: bool) -> Run:
    """`harness ARGV --repo REPO` in a process of its own, stderr on a pseudo-terminal (read
    while it runs, so a long run never blocks on a full terminal) or on a pipe; stdout
    into a file."""
    command = [sys.executable, "-m", "harness", *argv, "--repo", repo]
    if not terminal:
        done = subprocess.run(command, capture_output=True, check=False)
        return Run(done.returncode, done.stdout, done.stderr)
    leader, follower = pty.openpty()
    try:
        with tempfile.TemporaryFile() as out:  # not a pipe: a large report never blocks
            process = subprocess.Popen(command, stdout=out, stderr=follower)
            os.close(follower)
            drawn = _read_all(leader)
            code = process.wait()
            out.seek(0)
            return Run(code, out.read(), drawn)
    finally:
        os.close(leader)


@dataclass
class Shown:
    code: int
    out: str
    drawn: bytes


def run_on_terminal(*argv: str) -> Shown:
    """`harness ARGV` in this process, stderr on a pseudo-terminal (what reached it read
    after the run: a quiet run draws nothing, and a few lines fit its buffer)."""
    leader, follower = pty.openpty()
    try:
        os.set_blocking(leader, False)
        with open(follower, "w", closefd=False) as terminal:
            with (
                contextlib.redirect_stdout(io.StringIO()) as out,
                contextlib.redirect_stderr(terminal),
            ):
                code = main(list(argv))
            terminal.flush()
        try:
            drawn = os.read(leader, 1 << 16)
        except BlockingIOError:
            drawn = b""
        return Shown(code, out.getvalue(), drawn)
    finally:
        os.close(leader)
        os.close(follower)


def _read_all(fd: int) -> bytes:
    drawn = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the terminal's other end is closed: all read
            return drawn
        if not chunk:
            return drawn
        drawn += chunk


@pytest.mark.parametrize("name", list(LONG))
def test_a_long_command_draws_a_bar_on_a_terminal_and_nothing_elsewhere(name, history):
    argv, label = LONG[name]
    drawn = run_harness(argv, history.repo(), terminal=True)
    assert drawn.code in (0, 1), drawn.drawn
    assert drawn.drawn.startswith(b"\r") and label in drawn.drawn, drawn.drawn[:200]
    assert b"-]" in drawn.drawn or b"#]" in drawn.drawn  # a bar, closed
    last = drawn.drawn.rsplit(b"\r", 2)
    assert last[-1] == b"" and last[-2].strip(b" ") == b""  # erased at the end
    assert b"[" not in drawn.out[:1] and label not in drawn.out  # never on stdout

    quiet = run_on_terminal(*argv, "--quiet", "--repo", history.repo())
    piped = run_cli(*argv, "--repo", history.repo())  # stderr not a terminal
    assert quiet.drawn == b"" and piped.err == ""
    assert quiet.code == piped.code == drawn.code
    assert quiet.out == piped.out == drawn.out.decode()  # the report is the same in all three


def test_history_counts_the_commits_it_considers(history):
    drawn = run_harness(["history"], history.repo(), terminal=True).drawn
    report = json.loads(run_cli("history", "--repo", history.repo(), "--format", "json").out)
    total = report["considered"]
    assert total == 10  # the fixture's commits that touch the target's files
    assert f"] {total}/{total} ".encode() in drawn  # the count, after the bar


def test_bisect_steps_are_written_above_the_bar(history):
    """A step line written while the bar runs starts a line of its own, and the bar comes
    back after it (stdout and stderr on one terminal, as at a prompt)."""
    leader, follower = pty.openpty()
    argv = ["bisect", history.shas["initial"], "#30835", "--repo", history.repo()]
    try:
        process = subprocess.Popen([sys.executable, "-m", "harness", *argv],
                                   stdout=follower, stderr=follower)  # fmt: skip
        os.close(follower)
        shown = _read_all(leader)
        assert process.wait() == 1
    finally:
        os.close(leader)
    kept = [line.rsplit(b"\r", 1)[-1] for line in shown.split(b"\r\n")]  # what stays
    assert kept[0].startswith(b"sglang-fa4-page-size: "), shown  # the title, whole
    assert any(line.startswith(b"good: ") for line in kept), shown
    assert [line[:7] for line in kept if line.startswith(b"step ")] == [b"step 1:", b"step 2:"]
    assert not any(b"bisect: " in line for line in kept), shown  # no bar left in a line
    assert b"bisect: " in shown  # though one was drawn


def test_every_command_takes_quiet():
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(commands) >= {"diff", "history", "bisect", "explain", "passes", "snapshot",
                             "comment", "matrix", "demo"}  # fmt: skip
    for name, parser in commands.items():
        assert "--quiet" in parser.format_help(), name


def test_quiet_drops_informational_lines_and_keeps_the_report(history, private_cache):
    argv = ("diff", "#30835^", "#30835", "--repo", history.repo(), "--format", "json")
    first = run_cli(*argv)
    assert first.err == ""
    for loud in (True, False):
        damaged = _damage(private_cache)
        assert damaged, "the first run left cache files to damage"
        again = run_cli(*argv) if loud else run_cli(*argv, "--quiet")
        assert again.code == first.code and again.out == first.out
        if loud:
            assert again.err.count("is damaged; it will be replaced") >= 1
        else:
            assert again.err == ""


def _damage(cache: Path) -> list[Path]:
    """Every cache file with its last byte changed (its checksum then fails)."""
    files = [p for p in cache.rglob("*.bin") if p.is_file()]
    for path in files:
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
    return files


def test_quiet_keeps_a_warning_that_changes_what_the_result_means(tmp_path):
    """No commit touches the target: "no change" means nothing, and --quiet still says so."""
    repo = FixtureRepo(tmp_path / "elsewhere")
    repo.commit("unrelated", {"README.md": "not sglang\n"})
    result = run_cli("history", "--repo", str(repo.root), "--quiet")
    assert result.code == 0
    assert "warning: no commit in HEAD changes" in result.err

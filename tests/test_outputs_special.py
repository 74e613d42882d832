"""Where `--output FORMAT=FILE` and `snapshot -o FILE` write: into the path the user named.

A path that is not a regular file (a FIFO, a device node, a link to a process's
standard output, as /dev/stdout is) is written in place, never replaced by a regular file; `-` is
standard output; an existing file keeps its mode, a symlink stays a symlink and
its target is written; a new regular file is still written whole, with the mode
the umask gives. Each test runs the real CLI (in-process, or as a subprocess when
the file descriptors of the process itself matter), on special files of its own
(a harness that replaced them, run as root, must not replace the system's).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

from tests.conftest import run_cli
from tests.test_outputs import setup

HARNESS = [sys.executable, "-m", "harness"]


def snapshot_args(tmp_path: Path, target: str) -> list[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    repo, shas, matrix = setup(tmp_path)
    return ["snapshot", shas[1], "-o", target, "--repo", str(repo), "--matrix", str(matrix)]


def diff_args(tmp_path: Path, fmt_file: str) -> list[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    repo, shas, matrix = setup(tmp_path)
    return ["diff", *shas, "--repo", str(repo), "--matrix", str(matrix), "--output", fmt_file]


def regular_baseline(tmp_path: Path) -> str:
    """The baseline as written to a new regular file: what every other target must get."""
    plain = tmp_path / "plain" / "baseline.json"
    assert run_cli(*snapshot_args(tmp_path / "plain", str(plain))).code == 0
    return plain.read_text()


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if ".tmp-" in p.name]


def read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def reader() -> None:
        with open(path, "rb") as fifo:
            into.append(fifo.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    return thread


def test_a_fifo_is_written_in_place_and_stays_a_fifo(tmp_path):
    want = regular_baseline(tmp_path)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    thread = read_fifo(fifo, got)
    result = run_cli(*snapshot_args(tmp_path / "a", str(fifo)))
    thread.join(timeout=30)
    assert result.code == 0, result.err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert got == [want.encode()]
    assert leftovers(tmp_path) == []


def test_a_diff_output_to_a_fifo_is_the_json_report(tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    thread = read_fifo(fifo, got)
    result = run_cli(*diff_args(tmp_path, f"json={fifo}"))
    thread.join(timeout=30)
    assert result.code == 1, result.err  # V1 -> V2 changes three cells
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert len(json.loads(got[0])["changed"]) == 3


def device_node(tmp_path: Path) -> Path:
    """A null device of the test's own (root: made with mknod, so that a harness that
    replaced it would not replace the system's /dev/null); else /dev/null itself."""
    if os.geteuid() != 0:
        return Path("/dev/null")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
    return node


def test_a_device_node_is_written_in_place_even_as_root(tmp_path):
    node = device_node(tmp_path)
    before = os.stat(node)
    assert run_cli(*snapshot_args(tmp_path / "s", str(node))).code == 0
    assert run_cli(*diff_args(tmp_path / "d", f"json={node}")).code == 1
    after = os.stat(node)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert leftovers(node.parent) == []


def test_dash_is_standard_output_and_no_file_named_dash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli(*diff_args(tmp_path, "json=-"), "--format", "text")
    assert result.code == 1, result.err
    assert not (tmp_path / "-").exists()
    start = result.out.index("{")  # the text report, then the JSON one
    report, _ = json.JSONDecoder().raw_decode(result.out[start:])
    assert len(report["changed"]) == 3
    snap = run_cli(*snapshot_args(tmp_path / "s", "-"))
    assert snap.code == 0 and json.loads(snap.out)["matrix"]
    assert not (tmp_path / "-").exists()


def test_a_link_to_the_process_standard_output_writes_to_its_pipe(tmp_path):
    want = regular_baseline(tmp_path)
    link = tmp_path / "out.json"
    link.symlink_to("/proc/self/fd/1")
    done = subprocess.run([*HARNESS, *snapshot_args(tmp_path / "a", str(link))],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == want
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


def own_link(tmp_path: Path, fd: int) -> str:
    """A link of the test's own to `/proc/self/fd/FD`, as /dev/stdout (fd 1) and
    /dev/stderr (fd 2) are: a harness that replaced it replaces only this link."""
    link = tmp_path / f"fd{fd}"
    link.symlink_to(f"/proc/self/fd/{fd}")
    return str(link)


def test_dev_stdout_redirected_to_a_file_appends_to_what_stdout_wrote(tmp_path):
    want = regular_baseline(tmp_path)
    out = tmp_path / "captured.txt"
    with out.open("wb") as handle:
        handle.write(b"before\n")
        handle.flush()
        done = subprocess.run([*HARNESS, *snapshot_args(tmp_path / "a", own_link(tmp_path, 1))],
                              stdout=handle, stderr=subprocess.PIPE, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "before\n" + want  # not truncated, not replaced


def test_an_existing_file_keeps_its_mode_and_a_new_one_gets_the_umask(tmp_path):
    want = regular_baseline(tmp_path)
    existing = tmp_path / "existing.json"
    existing.write_text("old")
    existing.chmod(0o664)
    assert run_cli(*snapshot_args(tmp_path / "a", str(existing))).code == 0
    assert existing.read_text() == want and stat.S_IMODE(existing.stat().st_mode) == 0o664
    mask = os.umask(0o027)
    try:
        fresh = tmp_path / "fresh.json"
        assert run_cli(*snapshot_args(tmp_path / "b", str(fresh))).code == 0
    finally:
        os.umask(mask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~0o027
    assert leftovers(tmp_path) == []


def test_a_symlinked_baseline_stays_a_symlink_and_its_target_is_written(tmp_path):
    want = regular_baseline(tmp_path)
    real = tmp_path / "store" / "baseline.json"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "baseline.json"
    link.symlink_to(os.path.relpath(real, tmp_path))
    assert run_cli(*snapshot_args(tmp_path / "a", str(link))).code == 0
    assert link.is_symlink() and os.readlink(link) == "store/baseline.json"
    assert real.read_text() == want and stat.S_IMODE(real.stat().st_mode) == 0o640
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "store" / "new.json")
    assert run_cli(*diff_args(tmp_path / "d", f"json={dangling}")).code == 1
    assert dangling.is_symlink()
    assert len(json.loads((tmp_path / "store" / "new.json").read_text())["changed"]) == 3
    assert leftovers(real.parent) == [] and leftovers(tmp_path) == []


def test_a_directory_as_the_output_is_one_line_and_exit_2(tmp_path):
    target = tmp_path / "adir"
    target.mkdir()
    result = run_cli(*diff_args(tmp_path, f"json={target}"))
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1
    assert f"--output {target}" in result.err and "Traceback" not in result.err
    assert target.is_dir() and list(target.iterdir()) == []


def test_dev_stderr_redirected_to_a_file_is_written_after_what_stderr_wrote(tmp_path):
    out = tmp_path / "errors.txt"
    with out.open("wb") as handle:
        handle.write(b"before\n")
        handle.flush()
        done = subprocess.run([*HARNESS, *diff_args(tmp_path, f"json={own_link(tmp_path, 2)}")],
                              stdout=subprocess.PIPE, stderr=handle, timeout=120)  # fmt: skip
    assert done.returncode == 1
    text = out.read_text()
    assert text.startswith("before\n{")  # not truncated, not replaced by a new file
    report, _ = json.JSONDecoder().raw_decode(text, len("before\n"))
    assert len(report["changed"]) == 3

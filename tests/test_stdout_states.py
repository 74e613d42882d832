"""Odd states of standard output: each is a report written, or one line and a documented
exit, never a traceback or exit 3.

- an encoding that cannot spell the report (`PYTHONIOENCODING=ascii`, the C locale
  without coercion) with a non-ASCII commit subject, target path and value: the
  report is written, those characters escaped (`\\xe8`), with the command's status;
- a closed standard output (`>&-`): one line on stderr, exit 2, whatever the result
  (the report could not be written); with stderr closed too, still exit 2;
- a full device (`/dev/full`): one line, exit 2, whatever the result;
- a reader that went away (a pipe whose reading end is closed, as after `| head -1`):
  nothing said, and the command's own status (1 for a change, 0 for none).

Each runs the real CLI as a subprocess, on a real repository in tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.helpers import plain_matrix

HARNESS = [sys.executable, "-m", "harness"]
PATH = "pkg/dír/overrides.py"
VALUE = "grün"
SUBJECT = "Première page — ✓ (#12)"


def version(page: object) -> str:
    return f'''"""Passes."""


def target(view):
    if view.backend == "fa4":
        return {{"page_size": {page!r}}}
    return {{}}
'''


def setup(tmp_path: Path) -> tuple[list[str], list[str], list[str]]:
    """(a diff that changes 3 cells, a history that finds 1 change, a history that finds
    none): the argument lists of three runs on one repository."""
    repo = FixtureRepo(tmp_path / "repo")
    base = repo.commit("first", {PATH: version(128)})
    head = repo.commit(SUBJECT, {PATH: version(VALUE)})
    repo.commit("a comment only", {PATH: version(VALUE) + "# same behavior\n"})
    matrix = tmp_path / "m.yaml"
    matrix.write_text(plain_matrix("states", json.dumps(PATH)), encoding="utf-8")
    where = ["--repo", str(repo.root), "--matrix", str(matrix)]
    return (["diff", base, head, *where], ["history", *where],
            ["history", f"{head}..HEAD", *where])  # fmt: skip


def run(argv: list[str], shell_redirects: str = "", env: dict | None = None, **kwargs):
    """`harness ARGV` as a process of its own, its descriptors redirected by the shell."""
    command = ["sh", "-c", f'exec "$@" {shell_redirects}', "sh", *HARNESS, *argv]
    return subprocess.run(command, capture_output="stdout" not in kwargs, timeout=180,
                          env={**os.environ, **(env or {})}, **kwargs)  # fmt: skip


def escaped(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii")


C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
ASCII_ONLY = [{"PYTHONIOENCODING": "ascii"}, {**C_LOCALE, "PYTHONIOENCODING": ""}]


@pytest.mark.parametrize("env", ASCII_ONLY, ids=["PYTHONIOENCODING=ascii", "LANG=C"])
def test_an_ascii_only_stdout_gets_the_report_escaped(tmp_path, env):
    diff, history, _ = setup(tmp_path)
    for argv, texts in ((diff, (PATH, VALUE)), (history, (SUBJECT, PATH))):
        done = run(argv, env=env)  # one run, each of its texts looked for
        assert done.returncode == 1, done.stderr
        out = done.stdout.decode("ascii")  # nothing but ASCII was written
        for text in texts:
            assert escaped(text) in out and escaped(text) != text
        assert b"Traceback" not in done.stderr


def test_a_closed_stdout_is_one_line_and_exit_2_whatever_the_result(tmp_path):
    diff, history, unchanged = setup(tmp_path)
    to_stdout = [[*diff, "--output", f"json={name}", "--format", "json"]
                 for name in ("-", "/dev/stdout")]  # fmt: skip
    for argv in (diff, history, unchanged, *to_stdout):
        done = run(argv, ">&-")
        lines = done.stderr.decode().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert "standard output is closed" in lines[0]
    assert run(diff, ">&- 2>&-").returncode == 2  # nowhere to say it: still not 0 or 3


def test_a_full_device_is_one_line_and_exit_2_whatever_the_result(tmp_path):
    for argv in setup(tmp_path):
        done = run(argv, "> /dev/full")
        lines = done.stderr.decode().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert os.strerror(28) in lines[0]  # ENOSPC


def test_a_reader_gone_away_keeps_the_status_and_says_nothing(tmp_path):
    diff, history, unchanged = setup(tmp_path)
    for argv, status in ((diff, 1), (history, 1), (unchanged, 0)):
        reading, writing = os.pipe()
        os.close(reading)  # every write now fails with EPIPE, as after `| head -1`
        try:
            done = run(argv, stdout=writing, stderr=subprocess.PIPE)
        finally:
            os.close(writing)
        assert (done.returncode, done.stderr) == (status, b"")

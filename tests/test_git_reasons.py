"""When git cannot do what harness asks, git's own reason is in the one-line error.

Real repositories in tmp_path, broken as repositories break, and the real CLI as a
process of its own: an `objects/info/alternates` naming a directory that is gone (a
`clone --shared` whose source was removed), a corrupt commit, a corrupt file, a
directory of objects harness may not read; a shallow clone missing the commit asked
for says the clone is shallow and how to fetch the rest. What git says is read from
git itself, run on the same repository, never from harness.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.gitcmd import REASON_WIDTH, reason
from harness.testing.gitrepo import FixtureRepo
from tests.helpers import plain_matrix

HARNESS = [sys.executable, "-m", "harness"]
PATH = "pkg/overrides.py"


def version(page: int) -> str:
    return f'def target(view):\n    return {{"page_size": {page}}} if view.backend == "fa4" else {{}}\n'


def two_commits(root: Path) -> tuple[Path, list[str]]:
    repo = FixtureRepo(root)
    shas = [repo.commit("first", {PATH: version(128)}), repo.commit("second", {PATH: version(64)})]
    return root, shas


def one_line(repo: Path, *revisions: str) -> str:
    """The single stderr line of `harness diff REVISIONS` in `repo`, which must exit 2."""
    matrix = repo.parent / "m.yaml"
    matrix.write_text(plain_matrix("reasons", PATH), encoding="utf-8")
    done = subprocess.run([*HARNESS, "diff", *revisions, "--repo", str(repo), "--matrix",
                           str(matrix)], capture_output=True, text=True, timeout=180)  # fmt: skip
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    return lines[0]


def git_says(repo: Path, *args: str) -> list[str]:
    """The `error:`/`fatal:` lines git itself writes for `git ARGS` in `repo` (it fails)."""
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    assert done.returncode != 0
    return [line for line in done.stderr.splitlines() if line.startswith(("error:", "fatal:"))]


def loose(repo: Path, sha: str) -> Path:
    return repo / ".git" / "objects" / sha[:2] / sha[2:]


def corrupt(path: Path) -> None:
    path.chmod(0o644)
    path.write_bytes(b"not zlib at all")


def test_missing_alternates_are_named_as_git_names_them(tmp_path):
    source, _ = two_commits(tmp_path / "source")
    shared = tmp_path / "shared"
    subprocess.run(["git", "clone", "-q", "--shared", str(source), str(shared)], check=True)
    shutil.rmtree(source)
    line = one_line(shared, "HEAD~1", "HEAD")
    said = git_says(shared, "rev-parse", "--verify", "HEAD~1")
    assert any("alternate" in s and s in line for s in said), (said, line)
    assert "unknown revision" not in line and str(shared) in line


def test_a_corrupt_commit_is_named_as_git_names_it(tmp_path):
    repo, shas = two_commits(tmp_path / "repo")
    corrupt(loose(repo, shas[1]))
    line = one_line(repo, "HEAD~1", "HEAD")
    said = git_says(repo, "rev-parse", "--verify", "HEAD~1")
    said = [s for s in said if "corrupt" in s and shas[1] in s]
    assert said and said[0].split(" (stored in ")[0] in line  # where: as git's cwd has it
    assert "is corrupt" in line and "git fsck" in line
    assert "unknown revision" not in line


def test_a_commit_git_cannot_parse_is_named_with_gits_reason(tmp_path):
    """An object of type commit whose text is no commit (`hash-object --literally`): git
    has it and cannot read it. It was called "a commit, not a commit"."""
    repo, _ = two_commits(tmp_path / "repo")
    bogus = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--literally",
                            "--stdin"], cwd=repo, input="no header\n", check=True,
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    line = one_line(repo, bogus, "HEAD")
    said = git_says(repo, "log", "-1", bogus)
    assert said and said[0] in line and "git fsck" in line
    assert "not a commit" not in line


def test_a_corrupt_file_is_named_with_gits_reason(tmp_path):
    repo, shas = two_commits(tmp_path / "repo")
    blob = subprocess.run(["git", "rev-parse", f"{shas[1]}:{PATH}"], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    corrupt(loose(repo, blob))
    line = one_line(repo, shas[0], shas[1])
    said = git_says(repo, "cat-file", "-p", blob)
    assert said[0] in line and blob[:12] in line and PATH in line and "git fsck" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_objects_harness_may_not_read_are_named_with_gits_reason(tmp_path):
    repo, shas = two_commits(tmp_path / "repo")
    folder = loose(repo, shas[1]).parent
    folder.chmod(0)
    try:
        line = one_line(repo, shas[0], "HEAD")
        said = subprocess.run(["git", "cat-file", "-t", shas[1]], cwd=repo, capture_output=True)
    finally:
        folder.chmod(0o755)
    assert said.returncode != 0  # git cannot read it either (and says only "bad object")
    assert f"cannot open {folder}: Permission denied" in line and "HEAD" in line


def test_an_object_git_cannot_open_is_named_with_gits_reason(tmp_path):
    """Root reads every file: an object that is a directory fails to open for anyone."""
    repo, shas = two_commits(tmp_path / "repo")
    where = loose(repo, shas[1])
    where.unlink()
    where.mkdir()
    line = one_line(repo, "HEAD~1", "HEAD")
    said = git_says(repo, "rev-parse", "--verify", "HEAD~1")
    assert said and said[0] in line and "unknown revision" not in line


def test_a_shallow_clone_missing_the_commit_says_it_is_shallow(tmp_path):
    source, shas = two_commits(tmp_path / "source")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{source}", str(shallow)],
                   check=True)  # fmt: skip
    line = one_line(shallow, shas[0], "HEAD")
    assert shas[0] in line and "shallow" in line and "git fetch --unshallow" in line


def test_a_reason_is_gits_telling_line_printable_and_bounded():
    said = "error: first \x1b[31mred\x1b[0m\tthing\nfatal: Needed a single revision\n"
    assert reason(said) == "error: first [31mred [0m thing"  # the fatal line says nothing
    assert reason("error: e\nfatal: the object is corrupt\n") == "fatal: the object is corrupt"
    assert reason("fatal: bad revision 'x'\n") == ""
    long = reason("fatal: " + "x" * 1000)
    assert len(long) == REASON_WIDTH and long.endswith("...")


def test_a_corrupt_commit_inside_a_history_is_named_as_git_names_it(tmp_path):
    repo = FixtureRepo(tmp_path / "repo")
    shas = [repo.commit(f"c{n}", {PATH: version(128 >> n)}) for n in range(4)]
    corrupt(loose(repo.root, shas[1]))  # the range's ends resolve; its listing cannot
    matrix = tmp_path / "m.yaml"
    matrix.write_text(plain_matrix("reasons", PATH), encoding="utf-8")
    done = subprocess.run([*HARNESS, "history", "--repo", str(repo.root), "--matrix",
                           str(matrix)], capture_output=True, text=True, timeout=180)  # fmt: skip
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    said = git_says(repo.root, "log", "--format=%H", "HEAD")
    said = [s for s in said if "corrupt" in s and shas[1] in s]
    assert said and said[0].split(" (stored in ")[0] in lines[0] and "git fsck" in lines[0]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a repository to another user needs root")
def test_a_repository_of_another_user_says_how_to_trust_it(tmp_path):
    """A CI checkout owned by another user: git refuses it ("dubious ownership"); the one
    line says so, and how this user may trust it."""
    repo, shas = two_commits(tmp_path / "repo")
    subprocess.run(["chown", "-R", "65534", str(repo)], check=True)
    home = tmp_path / "home"  # no global configuration that trusts every directory
    home.mkdir()
    matrix = tmp_path / "m.yaml"
    matrix.write_text(plain_matrix("reasons", PATH), encoding="utf-8")
    done = subprocess.run([*HARNESS, "diff", *shas, "--repo", str(repo), "--matrix", str(matrix)],
                          capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HOME": str(home)})  # fmt: skip
    said = subprocess.run(["git", "status"], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "HOME": str(home)})  # fmt: skip
    assert "dubious ownership" in said.stderr  # git's own refusal
    [line] = done.stderr.splitlines()
    assert done.returncode == 2 and "dubious ownership" in line, done.stderr
    assert f"git config --global --add safe.directory {repo}" in line

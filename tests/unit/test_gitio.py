"""Git reads on a real repository built here: revisions, files, blobs, scans."""

from __future__ import annotations

import subprocess

import pytest

from harness import gitio
from harness.errors import HarnessError
from harness.testing.gitrepo import FixtureRepo

PATH = "pkg/overrides.py"


@pytest.fixture
def repo(tmp_path):
    """Four commits: add the file, touch another file, change it (#12), delete it (#13)."""
    fixture = FixtureRepo(tmp_path / "repo")
    shas = [
        fixture.commit("add the file", {PATH: "A = 1\n"}),
        fixture.commit("unrelated", {"README": "hi\n"}),
        fixture.commit("change it (#12)", {PATH: "A = 2\n"}),
    ]
    fixture.git("rm", "-q", PATH)
    fixture.ticks += 1
    fixture.git("commit", "-q", "-m", "delete it (#13)")
    shas.append(fixture.git("rev-parse", "HEAD"))
    return gitio.open_repo(str(fixture.root)), shas


def git_blob(repo, rev: str, path: str) -> str:
    return repo.git.rev_parse(f"{rev}:{path}")


def test_revisions_resolve_by_sha_relative_name_and_pr_number(repo):
    repo, shas = repo
    assert gitio.resolve(repo, shas[0][:8]).sha == shas[0]
    assert gitio.resolve(repo, "HEAD~1").sha == shas[2]
    assert gitio.resolve(repo, "#12").sha == shas[2]
    assert gitio.resolve(repo, "pr:13^").sha == shas[2]
    assert gitio.resolve(repo, "#12").subject == "change it (#12)"


@pytest.mark.parametrize("expr", ["nope", "#99", "-n", ""])
def test_an_unknown_revision_is_a_harness_error(repo, expr):
    with pytest.raises(HarnessError):
        gitio.resolve(repo[0], expr)


def test_files_are_read_at_a_revision_and_in_the_working_tree(repo):
    repo, shas = repo
    assert gitio.read_file(repo, gitio.resolve(repo, shas[0]), PATH) == "A = 1\n"
    assert gitio.read_file(repo, gitio.resolve(repo, shas[3]), PATH) is None
    assert gitio.read_file(repo, gitio.worktree(repo), PATH) is None  # deleted at HEAD
    assert gitio.blob_of(repo, shas[2], PATH) == git_blob(repo, shas[2], PATH)
    assert gitio.blob_of(repo, shas[2], "pkg") is None  # a tree, not a file


def test_a_scan_lists_the_commits_touching_the_path_with_their_blobs(repo):
    repo, shas = repo
    commits = gitio.commits_touching(repo, [shas[3]], [PATH])
    assert [c.sha for c in commits] == [shas[0], shas[2], shas[3]]
    first, change, delete = commits
    assert first.blobs == (None, git_blob(repo, shas[0], PATH)) and first.parent is None
    assert change.blobs == (git_blob(repo, shas[0], PATH), git_blob(repo, shas[2], PATH))
    assert delete.blobs == (git_blob(repo, shas[2], PATH), None)
    assert change.pr == 12 and change.parent == shas[1]


def test_ancestry_and_merge_base(repo):
    repo, shas = repo
    assert gitio.is_ancestor(repo, shas[0], shas[3])
    assert not gitio.is_ancestor(repo, shas[3], shas[0])
    assert gitio.merge_base(repo, shas[1], shas[3]) == shas[1]


def test_pr_numbers_come_from_the_end_of_the_subject():
    assert gitio.pr_number("Fix it (#30835)") == 30835
    assert gitio.pr_number('Revert "Fix it (#30835)" (#30871)') == 30871
    assert gitio.pr_number("Fix it (#30835) later") is None


def test_reading_never_writes(repo):
    repo, shas = repo
    root = repo.working_tree_dir

    def state() -> str:
        out = subprocess.run(["git", "-C", root, "status", "--porcelain", "--ignored"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        refs = subprocess.run(["git", "-C", root, "show-ref", "--head"],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        return out + refs

    before = state()
    gitio.commits_touching(repo, [shas[3]], [PATH])
    gitio.read_file(repo, gitio.resolve(repo, "#12"), PATH)
    assert state() == before

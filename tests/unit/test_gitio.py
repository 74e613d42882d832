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


def test_each_kind_of_revision_answers_for_itself(repo, tmp_path):
    """A commit, the working tree and a release each give their label, their commit and
    their files; none is told apart by a None."""
    from harness.releases.release import release_revision
    from tests.releases import build_wheel

    repo, shas = repo
    (tmp_path / "repo" / PATH).parent.mkdir()
    (tmp_path / "repo" / PATH).write_text("A = 3\n")  # uncommitted: only the working tree has it
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(build_wheel({"pkg/overrides.py": "A = 4\n"}, "1.0", name="pkg"))
    by_name, by_sha = gitio.resolve(repo, "HEAD~1"), gitio.resolve(repo, shas[2])
    tree = gitio.worktree(repo)
    release = release_revision(f"wheel:{wheel}", None, None)
    assert [r.kind for r in (by_name, tree, release)] == ["commit", "working tree", "release"]
    assert [r.sha for r in (by_name, by_sha, tree, release)] == [shas[2], shas[2], None, None]
    assert by_name.label == f"HEAD~1 ({shas[2][:10]})" and by_sha.label == shas[2][:10]
    assert (tree.label, tree.short) == ("the working tree", "worktree")
    assert release.label == release.short == f"wheel:{wheel}"
    texts = [gitio.read_file(repo, r, PATH) for r in (by_name, tree, release)]
    assert texts == ["A = 2\n", "A = 3\n", "A = 4\n"]

"""git itself, run by harness: discovery, objects and commands, on real repositories."""

from __future__ import annotations

import subprocess

import pytest

from harness.gitcmd import GitError, NotARepository, discover
from harness.testing.gitrepo import FixtureRepo


def _repo(tmp_path, texts: list[str]) -> tuple[FixtureRepo, list[str]]:
    repo = FixtureRepo(tmp_path / "repo")
    blobs = []
    for n, text in enumerate(texts):
        repo.commit(f"edit {n}", {"a.py": text})
        blobs.append(repo.git("rev-parse", "HEAD:a.py"))
    return repo, blobs


def test_discovery_finds_the_top_and_refuses_a_subdirectory_unless_searching(tmp_path):
    repo, _ = _repo(tmp_path, ["a = 1\n"])
    (repo.root / "sub").mkdir()
    top = str(repo.root.resolve())
    found = discover(repo.root.resolve(), search_parents=False)
    assert (found.working_tree_dir, found.git_dir, found.bare) == (top, f"{top}/.git", False)
    assert discover(repo.root.resolve() / "sub", search_parents=True).working_tree_dir == top
    with pytest.raises(NotARepository) as refused:
        discover(repo.root.resolve() / "sub", search_parents=False)
    assert refused.value.top == top
    with pytest.raises(NotARepository):
        discover(tmp_path.resolve(), search_parents=True)  # tmp_path holds no repository


def test_a_bare_clone_has_no_working_tree_and_git_dir_in_the_environment_is_ignored(
    tmp_path, monkeypatch
):
    repo, blobs = _repo(tmp_path, ["a = 1\n"])
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.root), str(bare)], check=True)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))  # must not redirect anything
    found = discover(bare.resolve(), search_parents=False)
    assert found.bare and found.working_tree_dir is None
    assert found.object(blobs[0]) == (blobs[0], "blob", b"a = 1\n")
    assert found.git.rev_parse("HEAD:a.py") == blobs[0]


def test_objects_are_read_whole_and_a_missing_or_odd_name_is_none(tmp_path):
    repo, blobs = _repo(tmp_path, ["a = 1\n", "a = 2\n"])
    found = discover(repo.root.resolve(), search_parents=False)
    assert found.object(blobs[1])[2] == b"a = 2\n"
    assert found.object("0" * 40) is None
    assert found.object(f"{blobs[0]}\n{blobs[1]}") is None  # one name per question
    assert found.object(blobs[0])[2] == b"a = 1\n"  # the batch is still in step


def test_a_failing_command_is_a_git_error_with_git_s_words(tmp_path):
    repo, _ = _repo(tmp_path, ["a = 1\n"])
    found = discover(repo.root.resolve(), search_parents=False)
    with pytest.raises(GitError) as failed:
        found.git.rev_parse("--verify", "--quiet", "no-such-ref^{commit}")
    assert failed.value.status == 1
    with pytest.raises(GitError) as failed:
        found.git.log("no-such-ref")
    assert "no-such-ref" in failed.value.stderr

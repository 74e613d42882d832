"""The blob stream a scan reads ahead with: on a real repository, against `git cat-file`."""

from __future__ import annotations

import subprocess

import pytest

from harness.gitcmd import LOOK, BlobStream, GitError, NotARepository, discover
from harness.testing.gitrepo import FixtureRepo


def _repo(tmp_path, texts: list[str]) -> tuple[FixtureRepo, list[str]]:
    repo = FixtureRepo(tmp_path / "repo")
    blobs = []
    for n, text in enumerate(texts):
        repo.commit(f"edit {n}", {"a.py": text})
        blobs.append(repo.git("rev-parse", "HEAD:a.py"))
    return repo, blobs


def _cat(repo: FixtureRepo, blob: str) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "blob", blob], cwd=repo.root, capture_output=True, check=True
    ).stdout


def test_blobs_come_back_as_git_stores_them_in_the_planned_order(tmp_path):
    texts = [f"x = {n}\n" + "# padding\n" * (n * 3000) for n in range(6)]  # up to ~180 KB
    repo, blobs = _repo(tmp_path, texts)
    with BlobStream(str(repo.root / ".git"), blobs) as stream:
        got = [stream.take(blob) for blob in blobs]
    assert got == [_cat(repo, b) for b in blobs]
    assert [g.decode() for g in got] == texts


def test_a_blob_asked_ahead_skips_those_between_and_one_behind_is_not_there(tmp_path):
    repo, blobs = _repo(tmp_path, [f"v = {n}\n" for n in range(5)])
    with BlobStream(str(repo.root / ".git"), blobs) as stream:
        assert stream.take(blobs[2]) == b"v = 2\n"
        assert stream.take(blobs[0]) is None  # passed: the caller reads it itself
        assert stream.take(blobs[3]) == b"v = 3\n"


def test_a_blob_planned_twice_is_given_twice(tmp_path):
    repo, blobs = _repo(tmp_path, ["a = 1\n", "a = 2\n"])
    plan = [blobs[0], blobs[1], blobs[0]]  # a revert brings the first text back
    with BlobStream(str(repo.root / ".git"), plan) as stream:
        assert [stream.take(b) for b in plan] == [b"a = 1\n", b"a = 2\n", b"a = 1\n"]


def test_unplanned_missing_and_far_ahead_blobs_are_none_and_the_stream_goes_on(tmp_path):
    repo, blobs = _repo(tmp_path, [f"k = {n}\n" for n in range(LOOK + 3)])
    missing = "0123456789abcdef0123456789abcdef01234567"
    plan = [blobs[0], missing, *blobs[1:]]
    with BlobStream(str(repo.root / ".git"), plan) as stream:
        assert stream.take("f" * 40) is None  # never planned
        assert stream.take(blobs[-1]) is None  # planned, but further ahead than LOOK
        assert stream.take(blobs[0]) == b"k = 0\n"
        assert stream.take(missing) is None  # git has no such object
        assert stream.take(blobs[1]) == b"k = 1\n"


def test_a_stream_whose_git_went_away_answers_none(tmp_path):
    repo, blobs = _repo(tmp_path, ["a = 1\n", "a = 2\n"])
    stream = BlobStream(str(repo.root / ".git"), blobs)
    stream.close()
    assert stream.take(blobs[0]) is None
    assert stream.take(blobs[1]) is None


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

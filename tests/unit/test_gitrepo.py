"""The fixture builder (`harness.testing.gitrepo`): what it commits is what git holds.

It saves processes (a path added once is staged by the commit itself; HEAD's sha is
read from git's files), so each test here asks git, by its own commands, what the
commits hold, whatever path the builder took.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.testing.gitrepo import FixtureRepo


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def tree(root: Path, sha: str) -> dict[str, str]:
    """Every file of commit `sha`, with its text, as git reads it."""
    paths = git(root, "ls-tree", "-r", "--name-only", sha).splitlines()
    return {path: git(root, "show", f"{sha}:{path}") for path in paths}


def test_each_commit_holds_every_file_written_so_far_and_its_sha_is_heads(tmp_path):
    repo = FixtureRepo(tmp_path / "r")
    written: dict[str, str] = {}
    steps = [{"a.py": "1"}, {"a.py": "2"}, {"b/c.py": "3"}, {"a.py": "4", "b/c.py": "5"}, {}]
    for n, files in enumerate(steps):
        sha = repo.commit(f"step {n}", files)
        written.update(files)
        assert sha == git(repo.root, "rev-parse", "HEAD")
        assert tree(repo.root, sha) == written
        assert git(repo.root, "log", "-1", "--format=%s") == f"step {n}"
    assert git(repo.root, "status", "--porcelain") == ""  # nothing left unstaged
    assert len(git(repo.root, "rev-list", "HEAD").splitlines()) == len(steps)


def test_a_path_git_no_longer_tracks_is_added_again(tmp_path):
    repo = FixtureRepo(tmp_path / "r")
    first = repo.commit("one", {"a.py": "1"})
    repo.git("rm", "-q", "a.py")
    repo.commit("gone", {"b.py": "2"})
    assert tree(repo.root, "HEAD") == {"b.py": "2"}
    again = repo.commit("back", {"a.py": "3"})
    assert tree(repo.root, again) == {"a.py": "3", "b.py": "2"}
    repo.git("checkout", "-q", "-b", "side", first)  # a branch where b.py never was
    repo.commit("side", {"b.py": "4"})
    assert tree(repo.root, "HEAD") == {"a.py": "1", "b.py": "4"}


def test_what_a_test_staged_itself_is_committed_with_the_files(tmp_path):
    repo = FixtureRepo(tmp_path / "r")
    repo.commit("one", {"a.py": "1"})
    repo.write("extra.py", "x")
    repo.git("add", "extra.py")
    sha = repo.commit("two", {"a.py": "2"})
    assert tree(repo.root, sha) == {"a.py": "2", "extra.py": "x"}


def test_a_detached_head_and_a_packed_branch_give_heads_sha(tmp_path):
    repo = FixtureRepo(tmp_path / "r")
    first = repo.commit("one", {"a.py": "1"})
    repo.git("checkout", "-q", "--detach")
    detached = repo.commit("two", {"a.py": "2"})
    assert detached == git(repo.root, "rev-parse", "HEAD") != first
    repo.git("checkout", "-q", "main")
    repo.git("pack-refs", "--all")
    assert repo.head() == first == git(repo.root, "rev-parse", "main")


def test_commits_are_never_signed_whatever_the_users_configuration(tmp_path):
    repo = FixtureRepo(tmp_path / "r")
    assert git(repo.root, "config", "--local", "commit.gpgsign") == "false"
    assert not (repo.root / ".git" / "hooks").exists()  # no template copied


def _files(git_dir: Path) -> dict[str, str | None]:
    """Every path under `git_dir`: a file's text, a directory's None."""
    return {
        str(path.relative_to(git_dir)): path.read_text() if path.is_file() else None
        for path in git_dir.rglob("*")
    }


def test_a_new_repository_is_what_git_init_makes_and_a_clone_is_kept(tmp_path):
    """The builder writes the repository rather than running `git init --template= -b
    main`: the same files, and the setting that keeps commits unsigned."""
    subprocess.run(["git", "init", "-q", "--template=", "-b", "main", str(tmp_path / "by-git")],
                   check=True)  # fmt: skip
    by_git = _files(tmp_path / "by-git" / ".git")
    repo = FixtureRepo(tmp_path / "ours")
    ours = _files(repo.root / ".git")
    assert ours.pop("config") == by_git.pop("config") + "[commit]\n\tgpgsign = false\n"
    assert ours == by_git
    assert git(repo.root, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(repo.root, "config", "--get", "commit.gpgsign") == "false"
    clone = tmp_path / "clone"
    repo.commit("one", {"a.py": "1"})
    subprocess.run(["git", "clone", "-q", str(repo.root), str(clone)], check=True)
    origin = git(clone, "config", "--get", "remote.origin.url")
    sha = FixtureRepo(clone).commit("two", {"a.py": "2"})
    assert git(clone, "config", "--get", "remote.origin.url") == origin  # its configuration kept
    assert tree(clone, sha) == {"a.py": "2"} and git(clone, "rev-list", "--count", "HEAD") == "2"

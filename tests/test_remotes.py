"""Which remote points at the GitHub repository (where `--pr N` fetches an open PR from):
names and URLs are read as data (`git config -z`), never from `git remote -v`'s
columns, and only a whole github.com URL of OWNER/REPO counts.

Real repositories in tmp_path, their remotes set with git itself.
"""

from __future__ import annotations

import pytest

from harness import gitio
from harness.testing.gitrepo import FixtureRepo

SLUG = "octo/sglang"


@pytest.fixture
def repo(tmp_path) -> FixtureRepo:
    repo = FixtureRepo(tmp_path / "repo")
    repo.commit("first", {"a.py": "x = 1\n"})
    return repo


def remote(repo: FixtureRepo, name: str, url: str) -> None:
    repo.git("config", f"remote.{name}.url", url)  # any name git's config can hold


def found(repo: FixtureRepo, slug: str = SLUG) -> str | None:
    return gitio.remote_for(gitio.open_repo(str(repo.root)), slug)


@pytest.mark.parametrize(
    "name",
    ["up\tstream", "two words", "-starts-like-an-option", "my.fork.of", "ünï (fetch)"],
)
def test_a_remote_with_an_odd_name_is_that_name(repo, name):
    remote(repo, "origin", "https://github.com/someone/else.git")
    remote(repo, name, "https://github.com/octo/sglang.git")
    assert found(repo) == name


@pytest.mark.parametrize(
    "url",
    ["https://github.com/octo/sglang", "https://github.com/Octo/SGLang.git/",
     "git@github.com:octo/sglang.git", "ssh://git@github.com:22/octo/sglang",
     "git://github.com/octo/sglang.git", "https://user@github.com/octo/sglang.git"],
)  # fmt: skip
def test_every_url_form_of_the_repository_counts(repo, url):
    remote(repo, "upstream", url)
    assert found(repo) == "upstream"


@pytest.mark.parametrize(
    "url",
    ["https://evil.example/x\tgithub.com/octo/sglang", "https://evil.example/github.com/octo/sglang",
     "https://github.com/octo/sglang-fork.git", "https://github.com/octo/sglang (fetch)",
     "https://github.com.evil.example/octo/sglang", "/srv/mirror/github.com/octo/sglang"],
)  # fmt: skip
def test_a_url_that_only_contains_the_repository_does_not(repo, url):
    remote(repo, "lookalike", url)
    assert found(repo) is None


def test_a_url_is_read_as_git_fetches_it_after_insteadof(repo):
    remote(repo, "short", "gh:octo/sglang")
    assert found(repo) is None
    repo.git("config", "url.https://github.com/.insteadOf", "gh:")
    assert found(repo) == "short"
    repo.git("config", "url./srv/mirror/.insteadOf", "gh:octo")  # longer prefix wins
    assert found(repo) is None


def test_no_remote_is_none(repo):
    assert found(repo) is None

"""Revisions are read as `git rev-parse` reads them ("anything git understands"), and a
name git finds ambiguous is said, not silently chosen.

Real repositories in tmp_path and the real CLI as a process of its own: `:/TEXT` (the
youngest commit whose message matches), `HEAD~N`, `@{-1}` (the branch checked out
before), `TAG^{commit}` and an annotated tag itself, `BRANCH@{0}`; a branch named like
another commit's short sha (git takes the branch and warns: so does harness, in one
line, with what git took); a name of a tree, or of nothing: one line, exit 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.helpers import plain_matrix

HARNESS = [sys.executable, "-m", "harness"]
PATH = "pkg/overrides.py"


def version(page: int) -> str:
    return f'''"""Passes."""


def target(view):
    if view.backend == "fa4":
        return {{"page_size": {page}}}
    return {{}}
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[FixtureRepo, dict[str, str], Path]:
    """first (128) <- lower (64, "Lower the FA4 page") <- comment; tag v1 (annotated) on
    lower; `side` checked out once and left, so @{-1} is `side` (at first)."""
    root = tmp_path_factory.mktemp("forms")
    repo = FixtureRepo(root / "repo")
    shas = {"first": repo.commit("Start the passes (#1)", {PATH: version(128)})}
    shas["lower"] = repo.commit("Lower the FA4 page (#2)", {PATH: version(64)})
    shas["comment"] = repo.commit("A comment (#3)", {PATH: version(64) + "# same\n"})
    repo.git("tag", "-a", "v1", "-m", "the lower page", shas["lower"])
    repo.git("checkout", "-q", "-b", "side", shas["first"])
    repo.git("checkout", "-q", "main")
    matrix = root / "m.yaml"
    matrix.write_text(plain_matrix("forms", PATH), encoding="utf-8")
    return repo, shas, matrix


def diff(repo, base: str, head: str) -> subprocess.CompletedProcess:
    fixture, _, matrix = repo
    return subprocess.run([*HARNESS, "diff", base, head, "--repo", str(fixture.root),
                           "--matrix", str(matrix), "--format", "json"],
                          capture_output=True, text=True, timeout=180)  # fmt: skip


@pytest.mark.parametrize(
    ("form", "names"),
    [(":/Lower the FA4", "lower"), ("HEAD~2", "first"), ("@{-1}", "first"),
     ("v1^{commit}", "lower"), ("v1", "lower"), ("main@{0}", "comment")],
)  # fmt: skip
def test_a_form_git_understands_names_its_commit(repo, form, names):
    _, shas, _ = repo
    done = diff(repo, form, shas["comment"])
    assert done.returncode in (0, 1, 4), done.stderr
    base = json.loads(done.stdout)["base"]
    assert (base["rev"], base["sha"]) == (form, shas[names])
    assert "warning" not in done.stderr


def test_a_branch_named_like_a_short_sha_is_taken_as_git_takes_it_and_said(repo):
    fixture, shas, _ = repo
    short = shas["first"][:8]
    fixture.git("branch", short, shas["comment"])  # git prefers the ref, and warns
    try:
        done = diff(repo, short, shas["lower"])
    finally:
        fixture.git("branch", "-D", short)
    assert json.loads(done.stdout)["base"]["sha"] == shas["comment"]
    (line,) = done.stderr.splitlines()
    assert "ambiguous" in line and short in line and shas["comment"][:10] in line
    assert "refs/heads/" in line  # the fix: name the ref in full


def test_a_name_both_a_tag_and_a_branch_is_taken_as_git_takes_it_and_said(repo):
    """git's order of refs (gitrevisions(7)): refs/tags/NAME before refs/heads/NAME, and
    git's warning said."""
    fixture, shas, _ = repo
    fixture.git("tag", "both", shas["first"])
    fixture.git("branch", "both", shas["comment"])
    try:
        done = diff(repo, "both", shas["lower"])
    finally:
        fixture.git("tag", "-d", "both")
        fixture.git("branch", "-D", "both")
    assert json.loads(done.stdout)["base"]["sha"] == shas["first"]
    (line,) = done.stderr.splitlines()
    assert "ambiguous" in line and "'both'" in line and shas["first"][:10] in line


@pytest.mark.parametrize(
    ("form", "words"),
    [
        ("HEAD^{tree}", "names a tree"),
        (":/no commit says this", "unknown revision"),
        ("^HEAD", "names no single commit"),
    ],
)
def test_a_form_that_names_no_commit_is_one_line(repo, form, words):
    done = diff(repo, form, "HEAD")
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert words in lines[0] and repr(form) in lines[0]

"""The working tree as a revision, and the user's repository left untouched."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from harness.testing.sglang_fixture import FULL_CLAUSE, OVERRIDES
from tests import oracle
from tests.conftest import git_out, rev_sha, run_cli
from tests.helpers import matrix_with_axes


def snapshot(repo: Path) -> dict:
    """Everything a command could disturb: HEAD, refs, index, working tree, config."""
    files = {
        str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    git_dir = repo / ".git"
    return {
        "HEAD": (git_dir / "HEAD").read_text(),
        "refs": git_out(repo, "for-each-ref"),
        "index": hashlib.sha256((git_dir / "index").read_bytes()).hexdigest(),
        "status": git_out(repo, "status", "--porcelain=v1", "--untracked-files=all"),
        "files": files,
        "config": (git_dir / "config").read_text(),
        "git_entries": sorted(p.name for p in git_dir.iterdir()),
    }


def add_full_clause(clone: Path) -> None:
    path = clone / OVERRIDES
    text = path.read_text()
    anchor = "and (view.speculative_eagle_topk or 0) <= 1"
    assert text.count(anchor) == 1
    path.write_text(text.replace(anchor, anchor + FULL_CLAUSE))


def test_bare_diff_compares_head_with_the_working_tree(clone):
    add_full_clause(clone)
    result = run_cli("diff", "--repo", str(clone), "--format", "json")
    report = json.loads(result.out)
    assert result.code == 1
    assert rev_sha(report["head"]) == {"rev": "worktree", "sha": None}
    assert report["base"]["sha"] == git_out(clone, "rev-parse", "HEAD").strip()
    got = {oracle.key(i["cell"]) for i in report["changed"]}
    assert got == set(oracle.changed_between(False, True))


def test_one_revision_compares_it_with_the_working_tree(clone):
    add_full_clause(clone)
    result = run_cli("diff", "#30835", "--repo", str(clone), "--format", "json")
    assert (result.code, json.loads(result.out)["changed"]) == (0, [])


def test_a_clean_working_tree_shows_no_change(clone):
    result = run_cli("diff", "--repo", str(clone))
    assert result.code == 0 and "working tree" in result.out


def test_no_command_touches_the_repository(clone, tmp_path):
    add_full_clause(clone)
    (clone / "untracked.txt").write_text("left alone\n")
    # every cell, one by one: on fewer of them than the shipped matrix's 349,920
    fewer = matrix_with_axes(tmp_path, prefill_attention_backend=[None, "fa4"], page_size=[None])
    every = ["--exhaustive", "--matrix", str(fewer), "--where", "platform=sm100"]
    before = snapshot(clone)
    repo, codes = str(clone), []
    for argv in (
        ["diff", "--repo", repo],
        ["diff", "#30835^", "#30835", "--repo", repo, "--format", "json"],
        ["diff", "HEAD~3", "--repo", repo, "--format", "markdown"],
        ["diff", "#30835^", "#30835", "--repo", repo, *every],
        ["diff", "nosuchrev", "--repo", repo],
        ["matrix"],
    ):
        codes.append(run_cli(*argv).code)
    assert snapshot(clone) == before
    assert codes == [1, 1, 1, 1, 2, 0]  # each ran (the unknown revision: a user error)


def test_an_uncommitted_helper_edit_is_seen_in_the_working_tree(clone):
    from harness.testing.sglang_fixture import BASE, package_files

    (clone / BASE).write_text(package_files(both_phases=False)[BASE])  # undo #30950 locally
    before = snapshot(clone)
    result = run_cli("diff", "HEAD", "--repo", str(clone), "--matrix",
                     "sglang-page-size-pipeline", "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    expected = {
        oracle.key_of(cell, oracle.PIPELINE_AXES)
        for cell in oracle.pipeline_cells()
        if oracle.pipeline_page_size(cell, False, both_phases=True)
        != oracle.pipeline_page_size(cell, False)
    }
    assert result.code == 1 and report["head"]["sha"] is None
    assert {oracle.key_of(i["cell"], oracle.PIPELINE_AXES) for i in report["changed"]} == expected
    assert snapshot(clone) == before

"""`harness history` on the fixture history and on small histories built for one point."""

from __future__ import annotations

import json

from harness import gitio
from harness.matrix.load import load_matrix
from harness.scan.cache import TableCache
from harness.scan.history import history
from harness.scan.versions import Versions
from harness.testing.gitrepo import FixtureRepo
from harness.testing.sglang_fixture import (
    SERVER_ARGS,
    Overrides,
    history_steps,
    overrides_source,
)
from tests import oracle
from tests.conftest import one_line_error, run_cli
from tests.helpers import commit_versions

STEPS = {step.key: step for step in history_steps()}


def history_json(repo: str, *args: str) -> tuple[int, dict]:
    result = run_cli("history", "--repo", repo, "--format", "json", *args)
    assert result.err == ""
    return result.code, json.loads(result.out)


def test_reports_exactly_30835_and_its_revert_and_skips_the_broken_commit(history):
    code, report = history_json(history.repo())
    forward = oracle.changed_between(base_clause=False, head_clause=True)
    backward = oracle.changed_between(base_clause=True, head_clause=False)
    assert code == 1
    assert [c["sha"] for c in report["commits"]] == [
        history.shas["pr30835"],
        history.shas["revert"],
    ]
    pr, revert = report["commits"]
    assert (pr["pr"], pr["reverts"], pr["cells_changed"]) == (30835, None, len(forward))
    assert (revert["pr"], revert["reverts"]) == (30871, history.shas["pr30835"])
    assert revert["cells_changed"] == len(backward)
    oracle.assert_exact_cover(pr["summary"], forward)
    oracle.assert_exact_cover(revert["summary"], backward)
    assert pr["subject"].endswith("(#30835)") and pr["date"].startswith("2025-")
    assert [s["sha"] for s in report["skipped"]] == [history.shas["broken"]]
    assert "syntax error" in report["skipped"][0]["reason"]
    assert report["range"] == "HEAD"


def test_text_marks_the_revert_with_the_pr_it_reverts(history):
    result = run_cli("history", "--repo", history.repo())
    pr_short = history.shas["pr30835"][:10]
    assert result.code == 1
    assert f"reverts {pr_short} (#30835)" in result.out
    assert "2 commits change page_size" in result.out
    assert "Skipped 1 commit that cannot be evaluated" in result.out
    assert history.shas["broken"][:10] in result.out.split("Skipped", 1)[1]


def test_a_range_limits_the_commits(history):
    code, report = history_json(history.repo(), "#30835^..#30835")
    assert code == 1
    assert [c["sha"] for c in report["commits"]] == [history.shas["pr30835"]]
    code, report = history_json(history.repo(), "#30835..")  # the revert, alone
    assert [c["sha"] for c in report["commits"]] == [history.shas["revert"]]
    assert report["commits"][0]["reverts"] is None  # what it undoes is outside the range
    code, report = history_json(history.repo(), f"{history.shas['broken']}..HEAD")
    assert (report["commits"], report["skipped"]) == ([], [])
    # the range starts at a commit that cannot be evaluated: what the commit after it
    # changed is not known, so it cannot tell (as `harness diff broken HEAD` cannot)
    start = f"the range's start, {history.shas['broken'][:10]}, cannot be evaluated"
    assert (code, report["cannot_tell"]) == (4, [start])


def test_where_limits_the_cells(history):
    code, report = history_json(history.repo(), "--where", "platform=sm90")
    assert (code, report["commits"]) == (0, [])
    result = run_cli("history", "--repo", history.repo(), "--where", "platform=sm90")
    assert "No commit changes page_size." in result.out


def test_comparison_carries_on_from_the_last_evaluable_commit(tmp_path):
    """good -> broken -> changed: the change is reported against `good`, once."""
    texts = [
        overrides_source(Overrides()),
        overrides_source(Overrides(broken=True)),
        overrides_source(Overrides(full_clause=True)),
        overrides_source(Overrides(full_clause=True, chunk=4096)),
    ]
    shas = commit_versions(tmp_path, texts)
    code, report = history_json(str(tmp_path))
    assert code == 1
    assert [c["sha"] for c in report["commits"]] == [shas[2]]
    assert report["commits"][0]["cells_changed"] == len(oracle.changed_between(False, True))
    assert [s["sha"] for s in report["skipped"]] == [shas[1]]


def test_each_distinct_function_is_evaluated_once_and_then_read_from_the_cache(tmp_path):
    """30 commits, 27 of them noise elsewhere in the file, three versions of the function."""
    repo_root = tmp_path / "repo"
    clause, texts = False, []
    for n in range(30):
        if n in (10, 20):
            clause = not clause
        texts.append(overrides_source(Overrides(full_clause=clause, chunk=1024 + n)))
    shas = commit_versions(repo_root, texts)
    repo, matrix = gitio.open_repo(str(repo_root)), load_matrix()
    cache = TableCache(tmp_path / "cache")
    first = Versions(repo, matrix, cache)
    report = history(repo, first, "HEAD", ["HEAD"])
    assert [c.commit.sha for c in report.changes] == [shas[10], shas[20]]
    assert report.changes[1].reverts.sha == shas[10]
    assert first.tables.evaluations == 2  # function versions: without clause, with clause
    again = Versions(repo, matrix, TableCache(tmp_path / "cache"))
    replay = history(repo, again, "HEAD", ["HEAD"])
    assert again.tables.evaluations == 0 and again.cache.hits == 2
    assert [c.commit.sha for c in replay.changes] == [shas[10], shas[20]]


def test_a_file_that_appears_later_starts_the_scan_there(tmp_path):
    """The commit creating the file has nothing to differ from: it is not a change."""
    commit_versions(tmp_path, [overrides_source(Overrides())])
    code, report = history_json(str(tmp_path))
    assert (code, report["commits"], report["skipped"], report["considered"]) == (0, [], [], 1)


def test_bad_ranges_are_one_line_errors(history):
    for bad, expected in [
        ("HEAD...main", "symmetric ranges"),
        ("nope..HEAD", "unknown revision 'nope'"),
        ("--where", None),
    ]:
        args = ("history", "--repo", history.repo(), bad)
        line = one_line_error(run_cli(*args))
        if expected:
            assert expected in line
    line = one_line_error(run_cli("history", "--repo", history.repo(), "--where", "gpu=h100"))
    assert "gpu" in line


def test_only_commits_touching_the_target_are_considered(history):
    code, report = history_json(history.repo())
    assert code == 1
    touching = [
        k for k, step in STEPS.items()
        if step.overrides is not None or SERVER_ARGS in (step.other or {})
    ]  # fmt: skip
    # not the docs commit, #30950 (a helper the FA4 pass does not use) nor #31030 (the
    # order of a pipeline); server_args.py's defaults are part of every closure
    assert report["considered"] == len(touching) == len(STEPS) - 3


def test_a_repository_without_the_target_file_warns(tmp_path):
    repo = FixtureRepo(tmp_path)
    repo.commit("Unrelated", {"README.md": "hello\n"})
    result = run_cli("history", "--repo", str(tmp_path))
    assert result.code == 0 and "No commit changes page_size." in result.out
    (warning,) = result.err.strip().splitlines()
    assert "no commit in HEAD changes python/sglang/srt/arg_groups/overrides.py" in warning


def test_each_change_says_because(history):
    _, report = history_json(history.repo())
    clause = "view.cuda_graph_config.prefill.backend != Backend.FULL"
    pr, revert = report["commits"]
    for rule in pr["summary"]:
        (reason,) = rule["because"]
        assert (reason["source"], reason["base"], reason["head"]["value"]) == (clause, None, False)
    for rule in revert["summary"]:
        (reason,) = rule["because"]
        assert (reason["source"], reason["head"], reason["base"]["value"]) == (clause, None, False)

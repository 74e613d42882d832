"""`harness bisect`: the first commit that changed outcomes, skipping what cannot run."""

from __future__ import annotations

import json

from harness.testing.gitrepo import FixtureRepo
from harness.testing.sglang_fixture import Overrides, overrides_source
from tests import oracle
from tests.conftest import Result, git_out, one_line_error, run_cli
from tests.helpers import PATH, commit_versions

GOOD_TEXT = overrides_source(Overrides())
BAD_TEXT = overrides_source(Overrides(full_clause=True))
BROKEN_TEXT = overrides_source(Overrides(broken=True))


def bisect_json(repo: str, *args: str) -> tuple[int, dict]:
    result = run_cli("bisect", "--repo", repo, "--format", "json", *args)
    assert result.err == ""
    return result.code, json.loads(result.out)


def cannot_tell(result: Result) -> str:
    """Assert the result is exit 4 with one line on stderr saying why, and no report."""
    assert result.code == 4, (result.code, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: cannot tell: "), result.err
    assert result.out == ""
    return lines[0]


def test_names_30835_between_its_parent_and_the_reverts_parent(history):
    code, report = bisect_json(history.repo(), "#30835^", "#30871^")
    assert code == 1
    assert report["culprit"] == {
        "sha": history.shas["pr30835"],
        "subject": "[Tiny] Enable Full Cuda Graph with Page size = 1 (#30835)",
        "pr": 30835,
    }
    assert report["candidates"] == []
    oracle.assert_exact_cover(report["summary"], oracle.changed_between(False, True))
    assert report["steps"][-1] == {"sha": history.shas["pr30835"], "verdict": "bad"}


def test_text_prints_each_step_then_the_culprit(history):
    result = run_cli("bisect", "#30835^", "#30871^", "--repo", history.repo())
    assert result.code == 1
    steps = [line for line in result.out.splitlines() if line.startswith("step ")]
    assert steps and steps[-1].endswith(": bad")
    culprit = result.out.split("First bad commit:", 1)[1]
    assert history.shas["pr30835"][:10] in culprit and "PR #30835" in culprit
    assert "128 -> input page_size" in culprit


def test_no_change_between_good_and_bad_exits_0(history):
    code, report = bisect_json(history.repo(), history.shas["initial"], "HEAD")
    assert (code, report["culprit"], report["summary"]) == (0, None, [])


def test_where_selects_cells(history):
    code, _ = bisect_json(history.repo(), "#30835^", "#30835", "--where", "platform=sm90")
    assert code == 0
    code, report = bisect_json(
        history.repo(), "#30835^", "#30835", "--where", "platform=sm100", "--where", "page_size=16"
    )
    page = oracle.NAMES.index("page_size")
    expected = {
        k: v for k, v in oracle.changed_between(False, True).items() if k[page] == ("int", 16)
    }
    assert code == 1
    oracle.assert_exact_cover(report["summary"], expected)


def verdicts(shas: list[str], kinds: list[str]) -> dict[str, str]:
    return dict(zip(shas, kinds, strict=True))


def test_steps_match_what_each_commit_holds(tmp_path):
    """A long history: every step's verdict agrees with the text committed there."""
    kinds = ["good"] * 9 + ["skip"] + ["good"] * 7 + ["bad"] * 14
    texts = {"good": GOOD_TEXT, "skip": BROKEN_TEXT, "bad": BAD_TEXT}
    shas = commit_versions(tmp_path, [texts[k] + f"\nNOISE = {n}\n" for n, k in enumerate(kinds)])
    code, report = bisect_json(str(tmp_path), shas[0], shas[-1])
    expected = verdicts(shas, kinds)
    assert code == 1
    assert report["culprit"]["sha"] == shas[kinds.index("bad")]
    for step in report["steps"]:
        assert step["verdict"] == expected[step["sha"]]
    assert len(report["steps"]) <= 6  # log2(30) rounds up to 5, plus a skip at most


def test_a_skipped_neighbour_leaves_candidates_and_cannot_tell(tmp_path):
    shas = commit_versions(tmp_path, [GOOD_TEXT, BROKEN_TEXT, BAD_TEXT, BAD_TEXT + "\nX = 1\n"])
    code, report = bisect_json(str(tmp_path), shas[0], shas[3])
    assert code == 4
    assert report["culprit"] is None
    assert report["candidates"] == [shas[1], shas[2]]
    assert {"sha": shas[1], "verdict": "skip"} in report["steps"]
    result = run_cli("bisect", shas[0], shas[3], "--repo", str(tmp_path))
    assert result.code == 4 and "the first bad commit is one of:" in result.out


def test_every_commit_between_unevaluable_cannot_tell(tmp_path):
    shas = commit_versions(tmp_path, [GOOD_TEXT, BROKEN_TEXT, BROKEN_TEXT + "\nX = 1\n", BAD_TEXT])
    code, report = bisect_json(str(tmp_path), shas[0], shas[3])
    assert code == 4 and report["culprit"] is None
    assert report["candidates"] == shas[1:]
    assert {s["sha"]: s["verdict"] for s in report["steps"]} == {shas[1]: "skip", shas[2]: "skip"}


def test_an_unevaluable_end_cannot_tell_in_one_line(tmp_path):
    shas = commit_versions(tmp_path, [GOOD_TEXT, BROKEN_TEXT, BAD_TEXT, BROKEN_TEXT + "\n# x\n"])
    repo = str(tmp_path)
    for fmt in ("text", "json"):
        line = cannot_tell(run_cli("bisect", shas[1], shas[2], "--repo", repo, "--format", fmt))
        assert f"GOOD {shas[1][:10]} is unevaluable" in line and "syntax error" in line
        assert shas[2][:10] not in line  # BAD is fine
    line = cannot_tell(run_cli("bisect", shas[0], shas[3], "--repo", repo))
    assert f"BAD {shas[3][:10]} is unevaluable" in line and shas[0][:10] not in line


def test_no_target_at_either_end_cannot_tell(tmp_path):
    repo = FixtureRepo(tmp_path)
    first = repo.commit("a readme", {"README.md": "no overrides here\n"})
    last = repo.commit("more of it", {"README.md": "still none\n"})
    line = cannot_tell(run_cli("bisect", first, last, "--repo", str(tmp_path)))
    assert f"GOOD {first[:10]} is absent" in line and f"BAD {last[:10]} is absent" in line


def test_a_good_before_the_target_existed_finds_where_it_appeared(tmp_path):
    repo = FixtureRepo(tmp_path)
    before = repo.commit("a readme", {"README.md": "soon\n"})
    repo.commit("more readme", {"README.md": "sooner\n"})
    added = repo.commit("add the overrides", {PATH: GOOD_TEXT})
    last = repo.commit("reword them", {PATH: GOOD_TEXT + "\n# reworded\n"})
    code, report = bisect_json(str(tmp_path), before, last)
    assert code == 1 and report["culprit"]["sha"] == added


def test_bad_endpoints_are_one_line_errors(tmp_path):
    shas = commit_versions(tmp_path, [GOOD_TEXT, BROKEN_TEXT, BAD_TEXT])
    repo = str(tmp_path)
    line = one_line_error(run_cli("bisect", shas[2], shas[0], "--repo", repo))
    assert "not an ancestor" in line
    line = one_line_error(run_cli("bisect", shas[2], shas[1], "--repo", repo))
    assert "not an ancestor" in line  # bad input is said first, even with an unevaluable end
    line = one_line_error(run_cli("bisect", shas[0], "--repo", repo))
    assert "give GOOD and BAD, or one range" in line
    line = one_line_error(run_cli("bisect", shas[0], shas[2], "--repo", repo, "--where", "x=1"))
    assert "x" in line
    line = one_line_error(run_cli("bisect", "nope", shas[2], "--repo", repo))
    assert "unknown revision 'nope'" in line


def test_the_culprit_says_because(history):
    _, report = bisect_json(history.repo(), "#30835^", "#30871^")
    clause = "view.cuda_graph_config.prefill.backend != Backend.FULL"
    assert report["summary"]
    for rule in report["summary"]:
        (reason,) = rule["because"]
        assert (reason["source"], reason["base"], reason["head"]["value"]) == (clause, None, False)
    markdown = run_cli("bisect", "#30835^", "#30871^", "--repo", history.repo(),
                       "--format", "markdown").out  # fmt: skip
    assert "| because |" in markdown and f"`{clause}`" in markdown


def branched(root) -> tuple[FixtureRepo, dict[str, str]]:
    """main: good, noise, then the change itself; feature, from main's first commit: noise,
    the change (its first bad commit), more noise. Shas by name."""
    repo = FixtureRepo(root)
    shas = {"fork": repo.commit("good", {PATH: GOOD_TEXT})}
    shas["main-noise"] = repo.commit("main noise", {PATH: GOOD_TEXT + "\nM = 1\n"})
    shas["main-bad"] = repo.commit("main takes it", {PATH: BAD_TEXT + "\nM = 1\n"})
    repo.git("checkout", "-q", "-b", "feature", shas["fork"])
    shas["feature-noise"] = repo.commit("feature noise", {PATH: GOOD_TEXT + "\nF = 1\n"})
    shas["feature-bad"] = repo.commit("feature takes it", {PATH: BAD_TEXT + "\nF = 1\n"})
    shas["feature-tip"] = repo.commit("feature noise", {PATH: BAD_TEXT + "\nF = 2\n"})
    repo.git("checkout", "-q", "main")
    return repo, shas


def test_three_dots_bisect_from_where_the_branch_left(tmp_path):
    """`main...feature` is the bisect from `git merge-base main feature` to feature."""
    _, shas = branched(tmp_path)
    repo = str(tmp_path)
    base = git_out(tmp_path, "merge-base", "main", "feature").strip()
    assert base == shas["fork"]  # the history is what the test means it to be
    code, ranged = bisect_json(repo, "main...feature")
    assert (code, ranged) == bisect_json(repo, base, "feature")
    assert code == 1 and ranged["culprit"]["sha"] == shas["feature-bad"]
    two = run_cli("bisect", "main..feature", "--repo", repo)
    assert (two.code, two.err) == (2, run_cli("bisect", "main", "feature", "--repo", repo).err)
    assert "not an ancestor" in two.err  # main's tip is not where feature came from


def test_three_dots_without_a_merge_base_is_one_line(tmp_path):
    repo, _ = branched(tmp_path)
    repo.git("checkout", "-q", "--orphan", "alone")
    repo.commit("unrelated", {PATH: GOOD_TEXT})
    repo.git("checkout", "-q", "main")
    line = one_line_error(run_cli("bisect", "alone...main", "--repo", str(tmp_path)))
    assert "alone and main share no history (no merge base)" in line

"""`harness bisect`: the first commit that changed outcomes, skipping what cannot run."""

from __future__ import annotations

import json

from harness.testing.sglang_fixture import Overrides, overrides_source
from tests import oracle
from tests.conftest import one_line_error, run_cli
from tests.helpers import commit_versions

GOOD_TEXT = overrides_source(Overrides())
BAD_TEXT = overrides_source(Overrides(full_clause=True))
BROKEN_TEXT = overrides_source(Overrides(broken=True))


def bisect_json(repo: str, *args: str) -> tuple[int, dict]:
    result = run_cli("bisect", "--repo", repo, "--format", "json", *args)
    assert result.err == ""
    return result.code, json.loads(result.out)


def test_names_30835_between_its_parent_and_the_reverts_parent(history):
    code, report = bisect_json(history.repo(), "#30835^", "#30871^")
    assert code == 0
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
    assert result.code == 0
    steps = [line for line in result.out.splitlines() if line.startswith("step ")]
    assert steps and steps[-1].endswith(": bad")
    culprit = result.out.split("First bad commit:", 1)[1]
    assert history.shas["pr30835"][:10] in culprit and "PR #30835" in culprit
    assert "128 -> input page_size" in culprit


def test_no_change_between_good_and_bad_exits_1(history):
    code, report = bisect_json(history.repo(), history.shas["initial"], "HEAD")
    assert (code, report["culprit"], report["summary"]) == (1, None, [])


def test_where_selects_cells(history):
    code, _ = bisect_json(history.repo(), "#30835^", "#30835", "--where", "platform=sm90")
    assert code == 1
    code, report = bisect_json(
        history.repo(), "#30835^", "#30835", "--where", "platform=sm100", "--where", "page_size=16"
    )
    page = oracle.NAMES.index("page_size")
    expected = {
        k: v for k, v in oracle.changed_between(False, True).items() if k[page] == ("int", 16)
    }
    assert code == 0
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
    assert code == 0
    assert report["culprit"]["sha"] == shas[kinds.index("bad")]
    for step in report["steps"]:
        assert step["verdict"] == expected[step["sha"]]
    assert len(report["steps"]) <= 6  # log2(30) rounds up to 5, plus a skip at most


def test_a_skipped_neighbour_leaves_candidates(tmp_path):
    shas = commit_versions(tmp_path, [GOOD_TEXT, BROKEN_TEXT, BAD_TEXT, BAD_TEXT + "\nX = 1\n"])
    code, report = bisect_json(str(tmp_path), shas[0], shas[3])
    assert code == 0
    assert report["culprit"] is None
    assert report["candidates"] == [shas[1], shas[2]]
    assert {"sha": shas[1], "verdict": "skip"} in report["steps"]
    result = run_cli("bisect", shas[0], shas[3], "--repo", str(tmp_path))
    assert "the first bad commit is one of:" in result.out


def test_bad_endpoints_are_one_line_errors(tmp_path):
    shas = commit_versions(tmp_path, [GOOD_TEXT, BROKEN_TEXT, BAD_TEXT])
    repo = str(tmp_path)
    result = run_cli("bisect", shas[1], shas[2], "--repo", repo)
    line = one_line_error(result)
    assert "GOOD" in line and "cannot be evaluated" in line and "syntax error" in line
    assert result.out == ""  # no half-printed report before the error
    line = one_line_error(run_cli("bisect", shas[2], shas[0], "--repo", repo))
    assert "not an ancestor" in line
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

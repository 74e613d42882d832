"""`harness diff` on the fixture history, against the predicate from CONTEXT.md."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests import oracle
from tests.conftest import git_out, run_cli
from tests.helpers import matrix_with_axes

RULE_ROW = re.compile(r"\| \d+ \| [\d,]+ \| ")  # a row of the rule table, not of the grid


def diff_json(history, *revs: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    result = run_cli("diff", *revs, "--format", "json", "--repo", history.repo(), *extra)
    assert result.err == ""
    return result.code, json.loads(result.out)


def changed_map(report: dict) -> dict[tuple, tuple]:
    return {
        oracle.key(item["cell"]): (item["base"]["page_size"], item["head"]["page_size"])
        for item in report["changed"]
    }


def test_pr_30835_changes_exactly_the_full_graph_fa4_cells(history):
    code, report = diff_json(history, "#30835^", "#30835")
    expected = oracle.changed_between(base_clause=False, head_clause=True)
    assert code == 1
    assert changed_map(report) == expected
    for base, head in expected.values():
        assert base == 128 and head != 128
    assert len(report["summary"]) <= 4
    oracle.assert_exact_cover(report["summary"], expected)
    assert {rule["transition"] for rule in report["summary"]} == {"128 -> input page_size"}


def test_the_changed_set_is_the_one_context_md_describes(history):
    """fa4 somewhere, not MLA, SM100, topk unset or 1, full prefill graphs, input != 128."""
    _, report = diff_json(history, "#30835^", "#30835")
    for item in report["changed"]:
        cell = item["cell"]
        backends = [cell[f] for f in oracle.NAMES[:3]]
        assert "fa4" in backends
        assert cell["use_mla"] is False and cell["platform"] == "sm100"
        assert cell["speculative_eagle_topk"] in (None, 1)
        assert cell["prefill_cuda_graph"] == "full" and cell["page_size"] != 128
    # 729 backend triples, 512 without fa4; topk null/1; page_size 4 of 5 values.
    assert len(report["changed"]) == (9**3 - 8**3) * 2 * 4


def test_the_revert_flips_the_same_cells_back(history):
    code, report = diff_json(history, "#30871^", "#30871")
    expected = oracle.changed_between(base_clause=True, head_clause=False)
    assert code == 1
    assert changed_map(report) == expected
    forward = oracle.changed_between(base_clause=False, head_clause=True)
    assert set(expected) == set(forward)
    oracle.assert_exact_cover(report["summary"], expected)
    assert {rule["transition"] for rule in report["summary"]} == {"input page_size -> 128"}


@pytest.mark.parametrize(
    "base, head",
    [
        ("initial", "noise"),  # another pass changed
        ("noise", "refactor"),  # helper calls -> get_platform(), method -> free function
        ("refactor", "comment"),  # a comment and a docstring-free comment line
        ("pr30835", "docs"),  # overrides.py untouched
        ("comment", "revert"),  # the revert restores the text exactly
        ("revert", "fixed"),  # another pass reworked
        ("initial", "fixed"),
    ],
)
def test_commits_that_keep_behavior_show_no_change(history, base, head):
    code, report = diff_json(history, history.shas[base], history.shas[head])
    assert (code, report["changed"], report["summary"]) == (0, [], [])


def test_json_names_matrix_target_revisions_and_cell_count(history):
    _, report = diff_json(history, "#30835^", "pr:30835")
    assert report["matrix"] == "sglang-fa4-page-size"
    path = "python/sglang/srt/arg_groups/overrides.py"
    assert report["target"] == {
        "path": path,
        "function": "_fa4_page_constraint",
        "output": "page_size",
    }
    for side, key, rev in (("base", "comment", "#30835^"), ("head", "pr30835", "pr:30835")):
        sha = history.shas[key]
        text = git_out(history.root, "show", f"{sha}:{path}").splitlines()
        line = text.index("def _fa4_page_constraint(view) -> Dict[str, Any]:") + 1
        subject = git_out(history.root, "log", "-1", "--format=%s", sha).strip()
        assert report[side] == {"rev": rev, "sha": sha, "subject": subject, "line": line}
    assert report["axes"] == oracle.AXES
    assert report["notes"] == {}
    total = 1
    for values in oracle.AXES.values():
        total *= len(values)
    assert report["cells"] == total == 349_920


def test_short_sha_branch_and_relative_revisions_resolve(history):
    short = history.shas["pr30835"][:8]
    code, report = diff_json(history, f"{short}~1", short)
    assert code == 1 and report["head"]["sha"] == history.shas["pr30835"]
    code, report = diff_json(history, "main~12", "main~4")  # initial .. fixed: no change
    assert (code, report["base"]["sha"]) == (0, history.shas["initial"])


def test_exhaustive_agrees_with_exploration(history, tmp_path):
    """On a smaller matrix of the same axes (run cell by cell, the shipped one costs
    700,000 calls and says no more: tests/unit/engine/test_explore.py compares the two
    on random passes); the report is the same, byte for byte."""
    matrix = matrix_with_axes(tmp_path, prefill_attention_backend=[None, "fa4", "triton"],
                              platform=["sm90", "sm100"], page_size=[None, 16])  # fmt: skip
    _, explored = diff_json(history, "#30835^", "#30835", extra=("--matrix", str(matrix)))
    extra = ("--matrix", str(matrix), "--exhaustive")
    _, exhaustive = diff_json(history, "#30835^", "#30835", extra=extra)
    assert exhaustive == explored
    # fa4 in a backend triple (9 x 9 x 3 of them, 8 x 8 x 2 without); topk null or 1;
    # page_size null or 16, both not 128; sm100 and full graphs only
    assert len(explored["changed"]) == (9 * 9 * 3 - 8 * 8 * 2) * 2 * 2


def test_where_restricts_the_compared_cells(history):
    code, report = diff_json(
        history, "#30835^", "#30835", extra=("--where", "platform=sm100", "--where", "page_size=16")
    )
    page_size = oracle.NAMES.index("page_size")
    expected = {
        k: v for k, v in oracle.changed_between(False, True).items() if k[page_size] == ("int", 16)
    }
    assert code == 1
    assert changed_map(report) == expected


def test_text_report_leads_with_the_rules(history):
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo())
    expected = oracle.changed_between(False, True)
    assert result.code == 1
    assert f"{len(expected):,} of 349,920 cells change page_size" in result.out
    assert "128 -> input page_size" in result.out
    assert "prefill_cuda_graph = full" in result.out and "platform = sm100" in result.out
    assert result.out.index("1. ") < result.out.index("Changed cells")
    sample_lines = result.out.split("Changed cells", 1)[1].strip().splitlines()[1:]
    assert len(sample_lines) == 10


def test_markdown_report_has_a_row_per_rule(history):
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--format", "markdown")
    _, report = diff_json(history, "#30835^", "#30835")
    rows = [line for line in result.out.splitlines() if RULE_ROW.match(line)]
    assert result.code == 1
    assert len([r for r in rows if "input page_size" in r]) == len(report["summary"])
    assert "<details>" in result.out


def test_no_change_text_says_so(history):
    result = run_cli("diff", "initial", "noise", "--repo", history.repo())
    assert result.code == 2  # 'initial' is not a revision name: the fixture keys are not refs
    result = run_cli(
        "diff", history.shas["initial"], history.shas["noise"], "--repo", history.repo()
    )
    assert result.code == 0
    assert "No cell changes page_size (349,920 cells compared)." in result.out


def test_three_dots_compare_where_the_branch_left_main(clone, history):
    """A branch off #30835^ that brings #30835's clause: `main...feature` is its merge base
    against it (exactly #30835's cells), while `main feature` also counts main's later
    commits (the revert and the rest) as the branch's."""
    pr, parent = history.shas["pr30835"], history.shas["comment"]
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "checkout", "-q", "-b", "feature", parent], cwd=clone, check=True)
    subprocess.run([*git, "cherry-pick", pr], cwd=clone, check=True, capture_output=True)
    subprocess.run([*git, "checkout", "-q", "-"], cwd=clone, check=True)
    result = run_cli("diff", "HEAD...feature", "--repo", str(clone), "--format", "json")
    report = json.loads(result.out)
    assert result.code == 1 and report["base"]["sha"] == parent
    assert changed_map(report) == oracle.changed_between(base_clause=False, head_clause=True)
    two = json.loads(run_cli("diff", "HEAD..feature", "--repo", str(clone), "--format", "json").out)
    assert two["base"]["sha"] != parent

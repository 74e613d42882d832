"""`harness explain` and the `because` of diff rules: the instrumented target, one cell at a time."""

from __future__ import annotations

import json
import subprocess

from tests import oracle
from tests.conftest import git_out, one_line_error, run_cli
from tests.helpers import PATH, commit_versions, module

CLAUSE = "view.cuda_graph_config.prefill.backend != Backend.FULL"
FA4_CELL = {"attention_backend": "fa4", "decode_attention_backend": "null",
            "prefill_attention_backend": "null", "use_mla": "false",
            "speculative_eagle_topk": "null", "prefill_cuda_graph": "full",
            "platform": "sm100", "page_size": "16"}  # fmt: skip


def where(cell: dict) -> list[str]:
    return [arg for axis, value in cell.items() for arg in ("--where", f"{axis}={value}")]


def explain_json(repo: str, rev: str, cell: dict = FA4_CELL) -> dict:
    result = run_cli("explain", rev, "--repo", repo, "--format", "json", *where(cell))
    assert (result.code, result.err) == (0, "")
    return json.loads(result.out)


def line_of(history, rev_key: str, text: str) -> int:
    source = git_out(history.root, "show", f"{history.shas[rev_key]}:{PATH}").splitlines()
    (line,) = [n for n, s in enumerate(source, 1) if text in s]
    return line


def operands(report: dict) -> dict[str, object]:
    return {e["source"]: e["value"] for e in report["trace"] if e["kind"] == "operand"}


def test_the_fa4_condition_operand_by_operand_at_30835_and_its_parent(history):
    head = explain_json(history.repo(), "#30835")
    base = explain_json(history.repo(), "#30835^")
    cell = {k: json.loads(v) if v not in ("fa4", "full", "sm100") else v
            for k, v in FA4_CELL.items()}  # fmt: skip
    assert (
        base["outcome"]
        == {"page_size": oracle.page_size(cell, full_clause=False)}
        == {"page_size": 128}
    )
    assert head["outcome"] == {"page_size": oracle.page_size(cell, full_clause=True)}
    assert operands(base) == {
        '_uses_backend(view, "fa4")': True,
        "use_mla_backend(view)": False,
        "not use_mla_backend(view)": True,
        "get_platform().is_sm100": True,
        "(view.speculative_eagle_topk or 0) <= 1": True,
    }
    assert operands(head) == {**operands(base), CLAUSE: False}
    clause = next(e for e in head["trace"] if e["source"] == CLAUSE)
    assert clause["line"] == line_of(history, "pr30835", CLAUSE)
    (condition,) = [e for e in head["trace"] if e["kind"] == "condition"]
    assert condition["value"] is False and condition["source"].endswith(CLAUSE)
    returns = [e for e in head["trace"] if e["kind"] == "return"]
    assert [r["source"] for r in returns] == ["return {}"]
    assert head["cell"]["page_size"] == 16 and head["passes"] == []


def test_short_circuit_operands_are_not_run(history):
    report = explain_json(history.repo(), "#30835", {**FA4_CELL, "platform": "sm90"})
    assert operands(report)["get_platform().is_sm100"] is False
    assert "(view.speculative_eagle_topk or 0) <= 1" not in operands(report)
    assert CLAUSE not in operands(report)


def test_each_operand_runs_exactly_once(tmp_path):
    """An operand with a side effect: evaluated twice, it would answer differently."""
    body = """
    _CALLS = []

    def _first_call(view):
        _CALLS.append(view.attention_backend)
        return len(_CALLS) == 1

    def _fa4_page_constraint(view):
        if _first_call(view) and view.attention_backend == "fa4":
            return {"page_size": 128}
        return {}
    """
    (sha,) = commit_versions(tmp_path, [module(body)])
    report = explain_json(str(tmp_path), sha)
    assert report["outcome"] == {"page_size": 128}
    assert operands(report) == {"_first_call(view)": True, 'view.attention_backend == "fa4"': True}


def test_text_shows_the_condition_then_its_operands(history):
    result = run_cli("explain", "#30835", "--repo", history.repo(), *where(FA4_CELL))
    lines = result.out.splitlines()
    assert "outcome: page_size = 16 (the input: nothing declared)" in lines
    first = next(n for n, line in enumerate(lines) if line.startswith("line ") and " if " in line)
    assert lines[first].endswith(": False")
    assert any(CLAUSE in line and line.endswith("= False") for line in lines[first + 1 :])


def test_a_cell_needs_one_value_per_axis(history):
    line = one_line_error(run_cli("explain", "HEAD", "--repo", history.repo()))
    assert "no --where and no default for: attention_backend" in line
    two = {**FA4_CELL, "platform": "sm90,sm100"}
    line = one_line_error(run_cli("explain", "HEAD", "--repo", history.repo(), *where(two)))
    assert "give one value" in line and "sm90, sm100" in line


def test_an_unevaluable_revision_says_why(history):
    result = run_cli("explain", "#30902", "--repo", history.repo(), *where(FA4_CELL))
    short = history.shas["broken"][:10]
    assert result.code == 0
    assert f"outcome: unevaluable at #30902 ({short}): syntax error" in result.out


def test_diff_rules_say_because_the_clause_was_added_then_removed(history):
    forward = json.loads(run_cli("diff", "#30835^", "#30835", "--repo", history.repo(),
                                 "--format", "json").out)  # fmt: skip
    line = line_of(history, "pr30835", CLAUSE)
    for rule in forward["summary"]:
        (reason,) = rule["because"]
        assert reason["source"] == CLAUSE and reason["base"] is None
        assert reason["head"] == {"line": line, "value": False}
    backward = json.loads(run_cli("diff", "#30871^", "#30871", "--repo", history.repo(),
                                  "--format", "json").out)  # fmt: skip
    for rule in backward["summary"]:
        (reason,) = rule["because"]
        assert (reason["source"], reason["head"]) == (CLAUSE, None)
        assert reason["base"] == {"line": line, "value": False}
    text = run_cli("diff", "#30835^", "#30835", "--repo", history.repo()).out
    assert f"because `{CLAUSE}` (line {line}) is new at head: False here" in text


RUNTIME_UNBOUND = """
def _fa4_page_constraint(view):
    if view.attention_backend == "fa4":
        return {"page_size": 128 if view.undeclared_thing else 1}
    return {}
"""


def test_a_name_unbound_at_run_time_is_the_one_line_reason_diff_gives(tmp_path):
    shas = commit_versions(tmp_path, [module(RUNTIME_UNBOUND), module(RUNTIME_UNBOUND) + "# x\n"])
    args = [a for axis, value in FA4_CELL.items() for a in ("--where", f"{axis}={value}")]
    result = run_cli("explain", shas[1], "--repo", str(tmp_path), *args)
    assert result.code == 0 and "Traceback" not in result.err
    (outcome,) = [line for line in result.out.splitlines() if line.startswith("outcome: ")]
    diff = run_cli("diff", *shas, "--repo", str(tmp_path), "--format", "json")
    note = json.loads(diff.out)["notes"]["head"]
    assert outcome == f"outcome: {note}"
    line = 1 + module(RUNTIME_UNBOUND).splitlines().index(
        '        return {"page_size": 128 if view.undeclared_thing else 1}'
    )
    assert f"view.undeclared_thing is read at {PATH}:{line}" in note


def test_the_same_run_time_failure_at_both_revisions_is_no_change(tmp_path):
    shas = commit_versions(tmp_path, [module(RUNTIME_UNBOUND), module(RUNTIME_UNBOUND) + "# x\n"])
    result = run_cli("diff", *shas, "--repo", str(tmp_path), "--format", "json")
    report = json.loads(result.out)
    assert result.code == 4 and report["changed"] == []
    assert "unevaluable" in report["notes"]["base"] and "unevaluable" in report["notes"]["head"]


COMMENTED = """
def _fa4_page_constraint(view):
    if (
        view.attention_backend == "fa4"  # the FA4 kernels
        # only on datacenter Blackwell
        and get_platform().is_sm100
    ):
        return {"page_size": 128}
    return {}
"""


def test_conditions_are_shown_without_the_comments_black_leaves_inside_them(tmp_path):
    (sha,) = commit_versions(tmp_path, [module(COMMENTED)])
    args = [a for axis, value in FA4_CELL.items() for a in ("--where", f"{axis}={value}")]
    report = json.loads(run_cli("explain", sha, "--repo", str(tmp_path), "--format", "json",
                                *args).out)  # fmt: skip
    (condition,) = [e for e in report["trace"] if e["kind"] == "condition"]
    assert condition["source"] == 'view.attention_backend == "fa4" and get_platform().is_sm100'
    assert condition["value"] is True


def feature_branch(clone, history) -> None:
    """A branch `feature` off #30835^ that brings #30835's clause, beside main's later commits."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    parent = history.shas["comment"]
    subprocess.run([*git, "checkout", "-q", "-b", "feature", parent], cwd=clone, check=True)
    subprocess.run([*git, "cherry-pick", history.shas["pr30835"]], cwd=clone, check=True,
                   capture_output=True)  # fmt: skip
    subprocess.run([*git, "checkout", "-q", "-"], cwd=clone, check=True)


def test_a_range_explains_the_cell_at_both_ends(clone, history):
    """`HEAD...feature` explains the cell where feature left HEAD (`git merge-base`), then at
    feature; `HEAD..feature` at HEAD, then at feature."""
    feature_branch(clone, history)
    repo = str(clone)
    base = git_out(clone, "merge-base", "HEAD", "feature").strip()
    assert base == history.shas["comment"] != git_out(clone, "rev-parse", "HEAD").strip()
    three = explain_json(repo, "HEAD...feature")
    assert three["base"] == {**explain_json(repo, base), "rev": "HEAD...feature"}
    assert three["head"] == explain_json(repo, "feature")
    cell = {k: json.loads(v) if v not in ("fa4", "full", "sm100") else v
            for k, v in FA4_CELL.items()}  # fmt: skip
    outcomes = [three[side]["outcome"]["page_size"] for side in ("base", "head")]
    assert outcomes == [oracle.page_size(cell, False), oracle.page_size(cell, True)]
    two = explain_json(repo, "HEAD..feature")
    assert two == {**three, "base": explain_json(repo, "HEAD")}
    text = run_cli("explain", "HEAD...feature", "--repo", repo, *where(FA4_CELL)).out
    assert [line for line in text.splitlines() if line.startswith("outcome: ")] == [
        "outcome: page_size = 128",
        "outcome: page_size = 16 (the input: nothing declared)",
    ]

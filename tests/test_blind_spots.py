"""Blind spots: changed code the matrix does not take every way is named, never "no change".

Expected lines are found in the fixture's own text; expected values (which input value
takes a condition the other way) come from reading the condition, never from harness.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import yaml

from tests import oracle
from tests.conftest import git_out, run_cli
from tests.helpers import PATH, commit_versions, matrix_holding, module, shipped_variant


def diff(repo: str, *args: str) -> tuple[int, dict]:
    result = run_cli("diff", *args, "--repo", repo, "--format", "json")
    assert result.err == "", result.err
    return result.code, json.loads(result.out)


def line_of(text: str, needle: str) -> int:
    (found,) = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    return found


def test_30835_behind_a_prefill_graph_the_matrix_holds_fixed_is_cannot_tell(history, tmp_path):
    matrix = matrix_holding(tmp_path, "prefill_cuda_graph", "breakable")
    code, report = diff(history.repo(), "#30835^", "#30835", "--matrix", str(matrix))
    assert code == 4 and report["status"] == 4 and report["changed"] == []
    head = git_out(history.root, "show", f"{history.shas['pr30835']}:{PATH}")
    (spot,) = report["blind_spots"]
    assert (spot["side"], spot["path"], spot["seen"]) == ("head", PATH, "only true")
    assert spot["line"] == line_of(head, "!= Backend.FULL")
    assert spot["condition"] == "view.cuda_graph_config.prefill.backend != Backend.FULL"
    # Backend.FULL is "full": the clause is false exactly there.
    assert spot["hint"] == (
        "prefill_cuda_graph is breakable on every cell; "
        "prefill_cuda_graph = full takes it the other way"
    )


def test_the_revert_is_a_blind_spot_of_the_base(history, tmp_path):
    matrix = matrix_holding(tmp_path, "prefill_cuda_graph", "breakable")
    code, report = diff(history.repo(), "#30835", "#30871", "--matrix", str(matrix))
    assert code == 4
    (spot,) = report["blind_spots"]
    base = git_out(history.root, "show", f"{history.shas['pr30835']}:{PATH}")
    assert (spot["side"], spot["line"]) == ("base", line_of(base, "!= Backend.FULL"))


def test_a_matrix_that_varies_the_input_sees_the_change_and_has_no_blind_spot(history):
    code, report = diff(history.repo(), "#30835^", "#30835")
    assert code == 1 and report["blind_spots"] == []
    assert len(report["changed"]) == len(oracle.changed_between(False, True))


def test_a_refactor_whose_conditions_all_go_both_ways_is_green(history):
    """#30410 respells platform and MLA checks; the FA4 matrix varies both."""
    code, report = diff(history.repo(), "#30410^", "#30410")
    assert code == 0, report["blind_spots"]
    assert report["changed"] == [] and report["blind_spots"] == []


BASE = """
def _fa4_page_constraint(view):
    if view.attention_backend == "fa4" and get_platform().is_sm100:
        return {"page_size": 128}
    return {}
"""

TOPK_THREE = """
def _fa4_page_constraint(view):
    if view.speculative_eagle_topk == 3:
        return {"page_size": PAGE}
    if view.attention_backend == "fa4" and get_platform().is_sm100:
        return {"page_size": 128}
    return {}
"""


def test_a_new_clause_on_a_value_no_axis_lists_is_named_with_that_value(tmp_path):
    head = module(TOPK_THREE.replace("PAGE", "2"))
    shas = commit_versions(tmp_path / "repo", [module(BASE), head])
    code, report = diff(str(tmp_path / "repo"), *shas)
    assert code == 4 and report["changed"] == []  # topk is null, 1, 2 or 8: never 3
    spots = {s["condition"]: s for s in report["blind_spots"]}
    spot = spots["view.speculative_eagle_topk == 3"]
    assert spot["seen"] == "only false" and spot["line"] == line_of(head, "== 3:")
    assert spot["hint"].endswith("speculative_eagle_topk = 3 takes it the other way")
    assert "speculative_eagle_topk takes null, 1, 2, 8 on the matrix" in spot["hint"]


def test_a_changed_line_in_a_block_no_cell_enters_is_a_blind_spot(tmp_path):
    base, head = (module(TOPK_THREE.replace("PAGE", page)) for page in ("2", "4"))
    shas = commit_versions(tmp_path / "repo", [base, head])
    code, report = diff(str(tmp_path / "repo"), *shas)
    assert code == 4
    sides = {(s["side"], s["seen"], s["line"]) for s in report["blind_spots"]}
    line = line_of(head, '"page_size": 4')
    assert sides == {("base", "never entered", line), ("head", "never entered", line)}
    assert all(s["hint"].endswith("= 3 enters it") for s in report["blind_spots"])


def test_a_comment_or_a_moved_function_asks_nothing(tmp_path):
    moved = module("\ndef _unrelated(view):\n    return {}\n" + BASE + "# a note\n")
    shas = commit_versions(tmp_path / "repo", [module(BASE), moved])
    code, report = diff(str(tmp_path / "repo"), *shas)
    assert code == 0 and report["blind_spots"] == []


def test_a_target_new_at_head_is_a_change(tmp_path):
    shas = commit_versions(
        tmp_path / "repo", [module(BASE).replace("_fa4", "_other"), module(BASE)]
    )
    where = ("--where", "platform=sm100", "--where", "attention_backend=fa4")  # the JSON lists each
    code, report = diff(str(tmp_path / "repo"), *shas, *where)
    assert code == 1 and report["cannot_tell"] == []
    assert "absent" in report["notes"]["base"]


def test_a_head_without_the_target_cannot_tell(tmp_path):
    shas = commit_versions(tmp_path / "repo", [module(BASE), module(BASE).replace("_fa4", "_x")])
    code, report = diff(str(tmp_path / "repo"), *shas)
    assert code == 4 and report["changed"] == []
    assert report["cannot_tell"] == [f"head has no _fa4_page_constraint in {PATH}"]


def test_blind_spots_read_back_from_the_cache_are_the_same(history, tmp_path):
    matrix = matrix_holding(tmp_path, "prefill_cuda_graph", "breakable")
    args = ("#30835^", "#30835", "--matrix", str(matrix), "--cache-dir", str(tmp_path / "c"))
    first, again = diff(history.repo(), *args), diff(history.repo(), *args)
    assert first == again and first[0] == 4 and first[1]["blind_spots"]


def test_every_format_says_cannot_tell(history, tmp_path):
    matrix = matrix_holding(tmp_path, "prefill_cuda_graph", "breakable")
    args = ("#30835^", "#30835", "--matrix", str(matrix), "--repo", history.repo())
    texts = {fmt: run_cli("diff", *args, "--format", fmt) for fmt in
             ("text", "markdown", "junit", "github")}  # fmt: skip
    assert all(result.code == 4 for result in texts.values())
    assert "Cannot tell: the code changed in 1 place the matrix did not take" in texts["text"].out
    assert "prefill_cuda_graph = full takes it the other way" in texts["markdown"].out
    assert 'type="CannotTell"' in texts["junit"].out
    head = git_out(history.root, "show", f"{history.shas['pr30835']}:{PATH}")
    line = line_of(head, "!= Backend.FULL")
    assert f"::warning file={PATH},line={line}," in texts["github"].out


def test_the_shipped_resolution_matrix_sees_30835_on_the_resolution_code(history, tmp_path):
    """#30835's clause on top of the fixture's resolution code: the whole-resolution matrix
    varies the prefill CUDA-graph mode, so the FA4 page size changes on the cells CONTEXT.md
    names, and `history` lists the commit."""
    from harness.testing.gitrepo import FixtureRepo
    from harness.testing.sglang_fixture import OVERRIDES, history_steps, overrides_source

    clone = tmp_path / "clone"
    git_out(history.root, "clone", "-q", str(history.root), str(clone))
    last = [step.overrides for step in history_steps() if step.overrides is not None][-1]
    FixtureRepo(clone).commit("[Tiny] Enable Full Cuda Graph with Page size = 1 (#30835)",
                              {OVERRIDES: overrides_source(replace(last, full_clause=True))})  # fmt: skip

    def answer(doc: dict) -> None:
        """What SGLang's files answer and the fixture's do not have: a GPU count, an
        environment variable's default."""
        doc["bindings"]["torch"] = {"object": {"cuda": {"object": {"device_count": {"call": 8}}}}}
        doc["fields"]["SGLANG_AITER_KV_CACHE_LAYOUT"] = "default"

    matrix = shipped_variant(tmp_path / "resolution.yaml", answer, "sglang-resolution")
    code, report = diff(str(clone), "HEAD~", "HEAD", "--matrix", str(matrix))
    assert code == 1 and report["blind_spots"] == []
    assert report["changed"]
    for item in report["changed"]:
        cell = item["cell"]
        assert cell["attention_backend"] == "fa4" and cell["use_mla"] is False
        assert cell["platform"] == "sm100" and cell["prefill_cuda_graph"] == "full"
        assert item["base"]["page_size"] == 128 != item["head"]["page_size"]
    listed = run_cli("history", "HEAD~..HEAD", "--repo", str(clone), "--matrix", str(matrix))
    assert listed.code == 1 and "(#30835)" in listed.out


def test_a_hostile_report_artifact_cannot_inject_markup_or_flood_the_comment():
    from harness.report.document import read_document
    from harness.report.markdown import render_document

    doc = {"matrix": "m", "target": {"function": "f", "path": "p", "output": "page_size"},
           "base": {"rev": "a", "sha": None, "subject": "s"},
           "head": {"rev": "b", "sha": None, "subject": "s"}, "cells": 1, "axes": {},
           "changed": [], "summary": [], "notes": {}, "cannot_tell": [],
           "blind_spots": [{"side": "head", "path": "<img src=x onerror=alert(1)>", "line": 1,
                            "condition": "`x` @team " + "y" * 10_000, "function": "f",
                            "seen": "only true", "hint": "<script>"}] * 50 + ["junk", {}]}  # fmt: skip
    text = render_document(read_document(doc))
    assert "<img" not in text and "<script>" not in text
    assert "`` `x` @team y" in text  # the backticks kept, in a longer fence: a code span
    assert len(text) < 10_000  # ten shown, each field cut
    assert "... and 40 more" in text


def changed_pair(tmp_path: Path, base_body: str, head_body: str, *args: str, top: str = ""):
    """A repository of two versions of the pass; the diff's exit status, report and head."""
    texts = [module(body) if not top else top + module(body) for body in (base_body, head_body)]
    shas = commit_versions(tmp_path / "repo", texts)
    code, report = diff(str(tmp_path / "repo"), *shas, *args)
    return code, report, texts[1]


def test_an_operand_under_not_is_a_blind_spot_of_its_own(tmp_path):
    head = BASE.replace("and get_platform()", "and not view.enable_dp_attention and get_platform()")
    matrix = matrix_holding(tmp_path, "page_size", 16)
    doc = yaml.safe_load(matrix.read_text())
    doc["fields"]["enable_dp_attention"] = False
    matrix.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, report, _ = changed_pair(tmp_path, BASE, head, "--matrix", str(matrix))
    assert code == 4
    spots = {s["condition"]: s for s in report["blind_spots"]}
    spot = spots["view.enable_dp_attention"]
    assert spot["seen"] == "only false" and "enable_dp_attention = true" in spot["hint"]


def test_every_condition_changed_on_one_line_is_asked(tmp_path):
    head = BASE.replace(
        'if view.attention_backend == "fa4"',
        'if view.page_size != 7 and view.attention_backend == "fa4"',
    )
    code, report, _ = changed_pair(tmp_path, BASE, head)
    assert code == 4  # page_size is null, 1, 16, 64 or 128: never 7
    spots = {s["condition"]: s for s in report["blind_spots"]}
    assert spots["view.page_size != 7"]["hint"].endswith("page_size = 7 takes it the other way")


def test_evaluated_code_cannot_replace_the_recording_functions(tmp_path):
    shadow = "    def __harness_test__(site, value):\n        return True\n"
    head = BASE.replace(
        "def _fa4_page_constraint(view):\n", "def _fa4_page_constraint(view):\n" + shadow
    )
    code, report, _ = changed_pair(tmp_path, BASE, head)
    assert code == 4 and "name __harness_test__" in report["notes"]["head"]
    case = BASE.replace(
        "    return {}\n",
        "    match 1:\n        case __harness_operand__:\n            pass\n    return {}\n",
    )
    code, report, _ = changed_pair(tmp_path / "match", BASE, case)
    assert code == 4 and "name __harness_operand__" in report["notes"]["head"]


def test_a_form_feed_does_not_shift_the_changed_lines(tmp_path):
    top = "# Copyright\n\x0c\n"
    head = BASE.replace("is_sm100:", "is_sm100 and view.page_size != 7:")
    code, report, text = changed_pair(tmp_path, BASE, head, top=top)
    assert code == 4
    (spot,) = [s for s in report["blind_spots"] if s["condition"] == "view.page_size != 7"]
    lines = text.replace("\r\n", "\n").split("\n")  # as Python numbers lines
    assert "!= 7" in lines[spot["line"] - 1]


HANDLER = """
def _small(view):
    try:
        return 8 // (view.page_size or 8) < 1
    except ZeroDivisionError:
        return False


def _fa4_page_constraint(view):
    if _small(view):
        return {"page_size": 128}
    return {}
"""


def test_a_changed_except_line_asks_that_its_handler_ran(tmp_path):
    head = HANDLER.replace("except ZeroDivisionError:", "except (ZeroDivisionError, TypeError):")
    code, report, _ = changed_pair(tmp_path, HANDLER, head)
    assert code == 4  # page_size is never 0: no cell divides by zero
    seen = {(s["side"], s["seen"]) for s in report["blind_spots"]}
    assert seen == {("base", "never entered"), ("head", "never entered")}


def test_the_last_of_two_definitions_is_the_one_compared(tmp_path):
    twice = "def _fa4(view):\n    return False\n\n\ndef _fa4(view):\n    return view.attention_backend == 'fa4'\n\n\ndef _fa4_page_constraint(view):\n    return {'page_size': 128} if _fa4(view) else {}\n"
    head = twice.replace(
        "    return view.attention_backend",
        "    if view.page_size == 7:\n        return False\n    return view.attention_backend",
    )
    code, report, _ = changed_pair(tmp_path, twice, head)
    assert code == 4 and report["blind_spots"][0]["condition"] == "view.page_size == 7"


def test_a_lambda_at_module_level_is_covered(tmp_path):
    lam = "_fa4 = lambda view: view.attention_backend == 'fa4'\n\n\ndef _fa4_page_constraint(view):\n    return {'page_size': 128} if _fa4(view) else {}\n"
    head = lam.replace("lambda view: view", "lambda view: view.page_size != 7 and view")
    code, report, _ = changed_pair(tmp_path, lam, head)
    assert code == 4
    assert [s["condition"] for s in report["blind_spots"]] == ["view.page_size != 7"]


def test_a_platform_held_by_a_field_still_gets_a_hint(tmp_path):
    matrix = matrix_holding(tmp_path, "platform", "sm90")
    head = BASE.replace('{"page_size": 128}', '{"page_size": 64}')
    code, report, _ = changed_pair(tmp_path, BASE, head, "--matrix", str(matrix))
    assert code == 4
    assert all("platform = sm100 enters it" in s["hint"] for s in report["blind_spots"])

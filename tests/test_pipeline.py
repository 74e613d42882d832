"""Pipeline mode: the final page_size after every pass, each seeing the earlier declarations."""

from __future__ import annotations

import json

from harness.engine.outcome import KEPT, VALUE
from harness.matrix.load import load_matrix
from harness.report.baseline import read
from harness.testing.sglang_fixture import Overrides, overrides_source
from tests import oracle
from tests.conftest import run_cli
from tests.helpers import commit_versions

PIPELINE = "sglang-page-size-pipeline"
PASSES = ["_mla_backend_page_constraints", "_fa4_page_constraint",
          "_intel_xpu_page_constraint", "_page_size_default"]  # fmt: skip
CELL = {"attention_backend": "triton", "decode_attention_backend": "null",
        "prefill_attention_backend": "null", "use_mla": "false", "speculative_eagle_topk": "null",
        "prefill_cuda_graph": "full", "platform": "sm90", "page_size": "null"}  # fmt: skip


def explain(repo: str, rev: str, **changes: str) -> dict:
    cell = {**CELL, **changes}
    args = [a for axis, value in cell.items() for a in ("--where", f"{axis}={value}")]
    result = run_cli("explain", rev, "--repo", repo, "--matrix", PIPELINE, "--format", "json",
                     *args)  # fmt: skip
    assert (result.code, result.err) == (0, "")
    return json.loads(result.out)


def test_the_pipeline_matrix_has_the_axes_and_passes_it_names():
    matrix = load_matrix(PIPELINE)
    assert list(matrix.target.passes) == PASSES
    assert {a.name: list(a.values) for a in matrix.axes} == oracle.PIPELINE_AXES


def test_no_constraint_and_no_input_resolves_to_1_not_null(history):
    report = explain(history.repo(), "HEAD")
    assert report["outcome"] == {"page_size": 1}
    assert report["passes"] == [
        {"pass": "_mla_backend_page_constraints", "declared": {}},
        {"pass": "_fa4_page_constraint", "declared": {}},
        {"pass": "_intel_xpu_page_constraint", "declared": {}},
        {"pass": "_page_size_default", "declared": {"page_size": 1}},
    ]


def test_the_fa4_cell_is_128_before_30835_and_the_default_sees_it(history):
    fa4 = {"attention_backend": "fa4", "platform": "sm100"}
    before = explain(history.repo(), "#30835^", **fa4)
    assert before["outcome"] == {"page_size": 128}
    assert before["passes"][1] == {"pass": "_fa4_page_constraint", "declared": {"page_size": 128}}
    assert before["passes"][3] == {"pass": "_page_size_default", "declared": {}}  # overlaid
    after = explain(history.repo(), "#30835", **fa4)
    assert after["outcome"] == {"page_size": 1}


def test_every_cell_matches_the_passes_semantics(history, tmp_path):
    for rev, clause in (("#30835^", False), ("#30835", True)):
        path = tmp_path / f"{clause}.json"
        result = run_cli("snapshot", rev, "-o", str(path), "--matrix", PIPELINE,
                         "--repo", history.repo())  # fmt: skip
        assert result.code == 0, result.err
        matrix = load_matrix(PIPELINE)
        table = read(str(path), matrix)
        page = matrix.axis_index("page_size")
        for index, cell in enumerate(oracle.pipeline_cells()):
            outcome = table.outcome_at(index)
            assert outcome.kind in (VALUE, KEPT)
            got = outcome.value if outcome.kind == VALUE else cell["page_size"]
            assert got == oracle.pipeline_page_size(cell, clause), (cell, got)
        assert page is not None


def test_diff_of_30835_on_the_pipeline(history):
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--matrix", PIPELINE,
                     "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    expected = {
        oracle.key_of(cell, oracle.PIPELINE_AXES): (
            oracle.pipeline_page_size(cell, False), oracle.pipeline_page_size(cell, True))
        for cell in oracle.pipeline_cells()
        if oracle.pipeline_page_size(cell, False) != oracle.pipeline_page_size(cell, True)
    }  # fmt: skip
    got = {oracle.key_of(i["cell"], oracle.PIPELINE_AXES):
           (i["base"]["page_size"], i["head"]["page_size"]) for i in report["changed"]}  # fmt: skip
    assert result.code == 1 and got == expected
    assert report["target"]["passes"] == PASSES
    assert report["base"]["skipped_passes"] == [] == report["head"]["skipped_passes"]


def test_a_missing_pass_is_skipped_and_reported(tmp_path):
    full = overrides_source(Overrides())
    start = full.index("\n\n@register_post_process\ndef _intel_xpu_page_constraint")
    end = full.index("\n\n@register_post_process\ndef _page_size_default")
    shas = commit_versions(tmp_path, [full[:start] + full[end:], full])
    result = run_cli("diff", *shas, "--repo", str(tmp_path), "--matrix", PIPELINE,
                     "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    assert report["base"]["skipped_passes"] == ["_intel_xpu_page_constraint"]
    assert report["head"]["skipped_passes"] == []
    xpu = [i["cell"] for i in report["changed"]]
    assert xpu and all(
        c["platform"] == "xpu" and c["attention_backend"] == "intel_xpu" for c in xpu
    )
    text = run_cli("diff", *shas, "--repo", str(tmp_path), "--matrix", PIPELINE).out
    assert "passes absent here (skipped): _intel_xpu_page_constraint" in text


def test_an_undeclared_attribute_in_a_later_pass_names_its_line(tmp_path):
    text = overrides_source(Overrides()).replace(
        "if view.page_size is None else {}", "if view.page_size is None and view.nope else {}"
    )
    (sha,) = commit_versions(tmp_path, [text])
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "view.nope" in s)
    result = run_cli("diff", sha, sha, "--repo", str(tmp_path), "--matrix", PIPELINE,
                     "--format", "json")  # fmt: skip
    note = json.loads(result.out)["notes"]["head"]
    assert f"view.nope is read at python/sglang/srt/arg_groups/overrides.py:{line}" in note

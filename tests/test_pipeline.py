"""Pipeline mode: the final page_size after every pass, each seeing the earlier declarations."""

from __future__ import annotations

import json

from harness.engine.outcome import KEPT, VALUE
from harness.matrix.load import load_matrix
from harness.report.baseline import read
from harness.testing.sglang_fixture import Overrides, overrides_source, package_files
from tests import oracle
from tests.conftest import run_cli
from tests.helpers import EVERY_PASS_MATRIX, commit_versions, module

PIPELINE = "sglang-page-size-pipeline"
# SGLang's order: the attention-backend handler's passes, then the default page size.
PASSES = ["_attention_backend_default", "_mla_backend_page_constraints",
          "_mla_kv_cache_dtype_checks", "_cutedsl_prefill_backend_fill",
          "_attention_backend_fa3_fp8_fallback", "_fa4_page_constraint",
          "_attention_backend_platform_fallbacks", "_intel_xpu_page_constraint",
          "_attention_backend_dual_chunk", "_page_size_default"]  # fmt: skip
IN_FIXTURE = ["_attention_backend_default", "_mla_backend_page_constraints",
              "_fa4_page_constraint", "_intel_xpu_page_constraint", "_page_size_default"]  # fmt: skip
ABSENT = [name for name in PASSES if name not in IN_FIXTURE]
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


def declared(report: dict) -> dict[str, dict]:
    """What each pass declared, by name (absent passes left out)."""
    return {p["pass"]: p["declared"] for p in report["passes"] if "declared" in p}


def test_no_constraint_and_no_input_resolves_to_1_not_null(history):
    report = explain(history.repo(), "HEAD")
    assert report["outcome"] == {"page_size": 1}
    assert [p["pass"] for p in report["passes"]] == PASSES  # in order, absent ones included
    assert [p["pass"] for p in report["passes"] if p.get("absent")] == ABSENT
    assert declared(report) == {
        "_attention_backend_default": {},
        "_mla_backend_page_constraints": {},
        "_fa4_page_constraint": {},
        "_intel_xpu_page_constraint": {},
        "_page_size_default": {"page_size": 1},
    }


def test_an_unset_backend_gets_the_default_the_later_passes_see(history):
    report = explain(history.repo(), "HEAD", attention_backend="null", use_mla="true",
                     platform="sm100")  # fmt: skip
    assert declared(report)["_attention_backend_default"] == {"attention_backend": "trtllm_mla"}
    assert declared(report)["_mla_backend_page_constraints"] == {"page_size": 64}
    assert report["outcome"] == {"page_size": 64}


def test_the_fa4_cell_is_128_before_30835_and_the_default_sees_it(history):
    fa4 = {"attention_backend": "fa4", "platform": "sm100"}
    before = explain(history.repo(), "#30835^", **fa4)
    assert before["outcome"] == {"page_size": 128}
    assert declared(before)["_fa4_page_constraint"] == {"page_size": 128}
    assert declared(before)["_page_size_default"] == {}  # it sees the overlaid 128
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
    assert report["base"]["skipped_passes"] == ABSENT == report["head"]["skipped_passes"]


def test_a_missing_pass_is_skipped_and_reported(tmp_path):
    full = overrides_source(Overrides())
    start = full.index("\n\n@register_post_process\ndef _intel_xpu_page_constraint")
    end = full.index("\n\n@register_post_process\ndef _page_size_default")
    shas = commit_versions(tmp_path, [full[:start] + full[end:], full], package_files())
    result = run_cli("diff", *shas, "--repo", str(tmp_path), "--matrix", PIPELINE,
                     "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    assert report["base"]["skipped_passes"] == [
        name for name in PASSES if name in ABSENT or name == "_intel_xpu_page_constraint"
    ]
    assert report["head"]["skipped_passes"] == ABSENT
    xpu = [i["cell"] for i in report["changed"]]
    assert xpu and all(
        c["platform"] == "xpu" and c["attention_backend"] == "intel_xpu" for c in xpu
    )
    text = run_cli("diff", *shas, "--repo", str(tmp_path), "--matrix", PIPELINE).out
    assert "_intel_xpu_page_constraint" in text.split("passes absent here (skipped):")[1]


def test_an_undeclared_attribute_in_a_later_pass_names_its_line(tmp_path):
    text = overrides_source(Overrides()).replace(
        "if view.page_size is None else {}", "if view.page_size is None and view.nope else {}"
    )
    (sha,) = commit_versions(tmp_path, [text], package_files())
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "view.nope" in s)
    result = run_cli("diff", sha, sha, "--repo", str(tmp_path), "--matrix", PIPELINE,
                     "--format", "json")  # fmt: skip
    note = json.loads(result.out)["notes"]["head"]
    assert f"view.nope is read at python/sglang/srt/arg_groups/overrides.py:{line}" in note


def helper_change() -> dict:
    """The cells #30950 (a change to model_override_base.py alone) changes, from the
    passes' semantics: intel_xpu pages now follow a split prefill backend too."""
    return {
        oracle.key_of(cell, oracle.PIPELINE_AXES): (
            oracle.pipeline_page_size(cell, False),
            oracle.pipeline_page_size(cell, False, both_phases=True),
        )
        for cell in oracle.pipeline_cells()
        if oracle.pipeline_page_size(cell, False)
        != oracle.pipeline_page_size(cell, False, both_phases=True)
    }


def test_a_helper_only_change_is_seen_by_diff_history_and_bisect(history):
    expected = helper_change()
    assert expected  # the fixture's change does change some cells
    repo = ("--repo", history.repo(), "--matrix", PIPELINE, "--format", "json")
    result = run_cli("diff", "#30950^", "#30950", *repo)
    got = {oracle.key_of(i["cell"], oracle.PIPELINE_AXES):
           (i["base"]["page_size"], i["head"]["page_size"]) for i in json.loads(result.out)["changed"]}  # fmt: skip
    assert result.code == 1 and got == expected
    found = json.loads(run_cli("history", *repo).out)
    assert [c["pr"] for c in found["commits"]] == [30835, 30871, 30950]
    assert found["commits"][-1]["cells_changed"] == len(expected)
    bisected = json.loads(run_cli("bisect", "#30903", "HEAD", *repo).out)
    assert bisected["culprit"]["pr"] == 30950


def test_the_cache_follows_a_helper_only_change(history, tmp_path):
    from harness import gitio
    from harness.scan.cache import TableCache
    from harness.scan.versions import Versions

    repo, matrix = gitio.open_repo(history.repo()), load_matrix(PIPELINE)
    before, after = (gitio.resolve(repo, rev) for rev in ("#30950^", "#30950"))
    first = Versions(repo, matrix, TableCache(tmp_path / "cache"))
    states = [first.at(before), first.at(after)]
    assert states[0].key != states[1].key and first.tables.evaluations == 2
    again = Versions(repo, matrix, TableCache(tmp_path / "cache"))
    assert again.at(after).table.codes == states[1].table.codes
    assert again.tables.evaluations == 0 and again.cache.hits == 1
    changed = helper_change()
    cells = list(oracle.pipeline_cells())
    index = next(
        i for i, c in enumerate(cells) if oracle.key_of(c, oracle.PIPELINE_AXES) in changed
    )
    outcome = again.at(after).table.outcome_at(index)
    assert outcome.value == oracle.pipeline_page_size(cells[index], False, both_phases=True)


ALL_MATRIX = EVERY_PASS_MATRIX

ALL_BODY = """
@register_post_process
def _second_in_name_first_in_file(view):
    return {"page_size": 64} if view.attention_backend == "flashmla" else {}

def _not_registered(view):
    return {"page_size": 3}

@register_post_process
def _a_default(view):
    return {} if view.page_size is not None else {"page_size": 1}
"""


def test_passes_all_runs_every_registered_pass_in_file_order(tmp_path):
    (sha,) = commit_versions(tmp_path / "repo", [module(ALL_BODY)])
    matrix = tmp_path / "all.yaml"
    matrix.write_text(ALL_MATRIX)
    for backend, page in (
        ("null", "null"),
        ("null", "16"),
        ("flashmla", "null"),
        ("flashmla", "16"),
    ):
        result = run_cli("explain", sha, "--repo", str(tmp_path / "repo"), "--matrix", str(matrix),
                         "--where", f"attention_backend={backend}", "--where", f"page_size={page}",
                         "--format", "json")  # fmt: skip
        report = json.loads(result.out)
        expected = 64 if backend == "flashmla" else (1 if page == "null" else 16)
        assert report["outcome"] == {"page_size": expected}
        assert [p["pass"] for p in report["passes"]] == [
            "_second_in_name_first_in_file",
            "_a_default",
        ]


def test_passes_all_with_no_registered_pass_is_absent_and_says_so(tmp_path):
    shas = commit_versions(tmp_path / "repo", [module("def _f(view):\n    return {}\n")] * 2)
    matrix = tmp_path / "all.yaml"
    matrix.write_text(ALL_MATRIX)
    result = run_cli("diff", *shas, "--repo", str(tmp_path / "repo"), "--matrix", str(matrix),
                     "--format", "json")  # fmt: skip
    note = json.loads(result.out)["notes"]["head"]
    assert (
        note.startswith("absent")
        and "no function is registered with @register_post_process" in note
    )

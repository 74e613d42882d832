"""`harness passes`: every registered pass, what it reads and declares, what blocks it."""

from __future__ import annotations

import json

from harness.testing.sglang_fixture import Overrides, overrides_source, package_files
from tests.conftest import one_line_error, run_cli
from tests.helpers import PATH, commit_versions, module


def line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


def passes_json(repo: str, *args: str) -> tuple[int, dict]:
    result = run_cli("passes", *args, "--repo", repo, "--format", "json")
    assert result.err == "", result.err
    return result.code, json.loads(result.out)


def test_every_registered_pass_in_file_order_with_what_it_reads_and_declares(history):
    source = overrides_source(Overrides(spelling="platform", chunk=12288))
    code, report = passes_json(history.repo(), history.shas["helper"])  # before server_args.py
    got = {p["name"]: p for p in report["passes"]}
    names = ["_chunked_prefill_default", "_attention_backend_default",
             "_mla_backend_page_constraints", "_fa4_page_constraint",
             "_intel_xpu_page_constraint", "_page_size_default"]  # fmt: skip
    assert list(got) == names
    for name in names:
        assert got[name]["line"] == line_of(source, f"def {name}(")
    assert got["_fa4_page_constraint"]["declares"] == ["page_size"]
    assert got["_attention_backend_default"]["declares"] == ["attention_backend"]
    assert "view.speculative_eagle_topk" in got["_attention_backend_default"]["reads"]  # helper
    assert "get_platform" in got["_attention_backend_default"]["reads"]
    # Under the pipeline matrix only the chunked prefill pass lacks an input.
    assert got["_chunked_prefill_default"]["needs_fields"] == ["chunked_prefill_size"]
    assert all(got[n]["needs_fields"] == [] == got[n]["blocked_by"] for n in names[1:])
    assert code == 1  # not every pass evaluates
    assert report["sha"] == history.shas["helper"]
    assert all(got[n]["order"] is None for n in names)  # no pipeline.py there: no order


def test_with_server_args_and_a_pipeline_the_defaults_answer_and_the_order_shows(history):
    _, report = passes_json(history.repo(), "HEAD")  # #31030: the page default moved up
    got = {p["name"]: p for p in report["passes"]}
    order = sorted(got, key=lambda n: got[n]["order"])
    assert order == ["_chunked_prefill_default", "_page_size_default",
                     "_attention_backend_default", "_mla_backend_page_constraints",
                     "_fa4_page_constraint", "_intel_xpu_page_constraint"]  # fmt: skip
    chunked = got["_chunked_prefill_default"]
    assert chunked["needs_fields"] == []  # ServerArgs declares chunked_prefill_size
    (blocked,) = chunked["blocked_by"]  # what is left: the GPU count it reads at import
    assert "torch.cuda.device_count" in blocked["reason"]


def test_a_name_nothing_supplies_blocks_the_pass_with_the_fix(tmp_path):
    body = """
    from sglang.srt.layers.quantization import pick_fp8_backend

    @register_post_process
    def _fp8_backend(view):
        return {"fp8_gemm_runner_backend": pick_fp8_backend(view.quantization)}

    @register_post_process
    def _fa4_page_constraint(view):
        return {}
    """
    text = module(body)
    shas = commit_versions(tmp_path, [text], package_files())
    code, report = passes_json(str(tmp_path), shas[0], "--matrix", "sglang-fa4-page-size")
    first, second = report["passes"]
    assert first["name"] == "_fp8_backend" and code == 1
    (blocked,) = first["blocked_by"]
    assert blocked["name"] == "pick_fp8_backend"
    assert f"{PATH}:{line_of(text, 'pick_fp8_backend(view')}" in blocked["reason"]
    assert "`bindings:`" in blocked["reason"]
    assert second["blocked_by"] == [] == second["needs_fields"]


def test_text_output_counts_and_bad_revision(history):
    result = run_cli("passes", "--repo", history.repo())
    assert "5 of 6 evaluate under matrix sglang-page-size-pipeline" in result.out
    assert "_chunked_prefill_default" in result.out and "torch.cuda.device_count" in result.out
    line = one_line_error(run_cli("passes", "nope", "--repo", history.repo()))
    assert "unknown revision 'nope'" in line


def test_every_input_read_at_run_time_is_listed(tmp_path):
    body = """
    @register_post_process
    def _env_pass(view):
        if envs.SGLANG_FIRST_KNOB.get() and envs.SGLANG_SECOND_KNOB.get():
            return {"page_size": 1}
        return {}
    """
    (sha,) = commit_versions(tmp_path, [module(body)], package_files())
    code, report = passes_json(str(tmp_path), sha)
    (only,) = report["passes"]
    assert only["needs_fields"] == ["SGLANG_FIRST_KNOB", "SGLANG_SECOND_KNOB"]
    assert only["blocked_by"] == [] and code == 1


def test_a_revision_without_the_file_or_that_does_not_parse_is_one_line(tmp_path):
    shas = commit_versions(tmp_path, [module("def _f(view):\n    return {}\n"), "def broken(:\n"])
    line = one_line_error(run_cli("passes", shas[1], "--repo", str(tmp_path)))
    assert f"cannot list the passes at {shas[1][:10]}: syntax error in {PATH} line 1" in line
    result = run_cli("passes", shas[0], "--repo", str(tmp_path))
    assert result.code == 0 and "is registered with @register_post_process" in result.out


def test_a_helper_file_that_does_not_parse_blocks_only_the_passes_that_use_it(tmp_path):
    body = """
    from sglang.srt.arg_groups.choices import SIZES

    @register_post_process
    def _uses_it(view):
        return {"page_size": SIZES[0]}

    @register_post_process
    def _fa4_page_constraint(view):
        return {}
    """
    choices = "python/sglang/srt/arg_groups/choices.py"
    (sha,) = commit_versions(tmp_path, [module(body)], {choices: "SIZES = [16,\n"})
    code, report = passes_json(str(tmp_path), sha, "--matrix", "sglang-fa4-page-size")
    first, second = report["passes"]
    (blocked,) = first["blocked_by"]
    assert f"syntax error in {choices} line" in blocked["reason"]
    assert second["blocked_by"] == [] and code == 1


def test_conditions_no_cell_takes_both_ways_are_listed_per_pass(history):
    """The pipeline matrix holds kv_cache_dtype at auto: `!= 'auto'` is never true; it varies
    every input the FA4 pass tests, so that pass has none."""
    _, report = passes_json(history.repo(), "HEAD")
    got = {p["name"]: p for p in report["passes"]}
    assert got["_fa4_page_constraint"]["one_way"] == []
    seen = {
        item["condition"]: item["seen"] for item in got["_intel_xpu_page_constraint"]["one_way"]
    }
    assert seen["view.kv_cache_dtype != 'auto'"] == "only false"
    text = run_cli("passes", "HEAD", "--repo", history.repo()).out
    assert "condition(s) no cell takes both ways" in text


def test_a_matrix_whose_target_is_an_entry_is_refused_with_the_fix(history, tmp_path):
    """An entry's file registers no pass: listing none there would say nothing."""
    matrix = tmp_path / "entry.yaml"
    matrix.write_text(
        "name: entry\ntarget: {path: python/sglang/srt/arg_groups/pipeline.py, entry: "
        "run_resolution_pipeline, output: page_size}\nworld: sglang\naxes:\n  page_size: [null, 1]\n"
    )
    line = one_line_error(
        run_cli("passes", "HEAD", "--repo", history.repo(), "--matrix", str(matrix))
    )
    assert "targets an entry (run_resolution_pipeline in" in line and "sglang-resolution" in line

"""Extraction and evaluation: only the closure runs, strictly bound."""

from __future__ import annotations

import json

from harness.engine.outcome import ABSENT, ERROR, UNEVALUABLE
from harness.matrix.load import load_matrix, parse_matrix, shipped_dir
from harness.scan.compare import compare
from tests import oracle
from tests.conftest import one_line_error, run_cli
from tests.helpers import (
    PATH,
    commit_versions,
    evaluate_at,
    fa4_matrix,
    matrix_with_axes,
    module,
    resolved_outcomes,
)

SIMPLE = """
def _fa4_page_constraint(view):
    return {"page_size": 128} if view.attention_backend == "fa4" else {}
"""


def only_outcome(evaluation):
    assert len(evaluation.table.outcomes) == 1
    return evaluation.table.outcomes[0]


def test_module_level_code_never_runs(tmp_path):
    marker = tmp_path / "marker"
    top = f"open({str(marker)!r}, 'w').write('ran')\nraise SystemExit(3)\nimport torch\n"
    (sha,) = commit_versions(tmp_path / "repo", [module(SIMPLE, top=top)])
    evaluation = evaluate_at(tmp_path / "repo", sha)
    assert {o.kind for o in evaluation.table.outcomes} == {"value", "kept"}
    assert not marker.exists()


def test_helpers_and_constants_come_along_transitively(tmp_path):
    body = """
    _BASE = 64
    PAGE = _BASE * 2
    def _size():
        return PAGE
    def _wants(view):
        return view.attention_backend in _NAMES
    _NAMES = {"fa4"}
    def _fa4_page_constraint(view):
        return {"page_size": _size()} if _wants(view) else {}
    def _unrelated(view):
        return {"x": not_bound_anywhere()}
    """
    (sha,) = commit_versions(tmp_path / "repo", [module(body)])
    evaluation = evaluate_at(tmp_path / "repo", sha)
    got = resolved_outcomes(evaluation.table, load_matrix())
    want = [128 if c["attention_backend"] == "fa4" else c["page_size"] for c in oracle.all_cells()]
    assert got == want
    assert "_unrelated" not in "".join(
        str(n.lineno) + getattr(n, "name", "") for n in evaluation.closure.nodes
    )


def test_an_imported_name_the_world_does_not_bind_is_unevaluable(tmp_path):
    top = "from sglang.srt.utils import is_nixl_transport_ready\n"
    body = """
    def _fa4_page_constraint(view):
        return {"page_size": 16} if is_nixl_transport_ready() else {}
    """
    shas = commit_versions(tmp_path / "repo", [module(SIMPLE), module(body, top=top)])
    outcome = only_outcome(evaluate_at(tmp_path / "repo", shas[1]))
    assert outcome.kind == UNEVALUABLE
    for part in ("is_nixl_transport_ready", "from sglang.srt.utils", "bindings:", f"{PATH}:"):
        assert part in outcome.value
    result = run_cli("diff", *shas, "--repo", str(tmp_path / "repo"), "--format", "json")
    assert result.code == 4  # cannot tell: nothing was compared, no cell is listed
    report = json.loads(result.out)
    assert report["changed"] == [] and report["cannot_tell"] == ["head could not be evaluated"]
    reason = report["notes"]["head"]
    assert reason.startswith(
        f"unevaluable at {shas[1][:10]}: name is_nixl_transport_ready (used at {PATH}:"
    )


def test_a_matrix_binding_makes_it_evaluable(tmp_path):
    top = "from sglang.srt.utils import is_blackwell_datacenter\n"
    body = """
    def _fa4_page_constraint(view):
        return {"page_size": 128} if is_blackwell_datacenter() else {}
    """
    (sha,) = commit_versions(tmp_path / "repo", [module(body, top=top)])
    text = (_matrix_text()).replace(
        "bindings: {}",
        "bindings:\n  is_blackwell_datacenter: {call: {axis_in: {platform: [sm100]}}}",
    )
    matrix = parse_matrix(text, "custom.yaml")
    got = resolved_outcomes(evaluate_at(tmp_path / "repo", sha, matrix).table, matrix)
    assert got == [128 if c["platform"] == "sm100" else c["page_size"] for c in oracle.all_cells()]


def test_an_undeclared_view_attribute_is_unevaluable_not_none(tmp_path):
    body = """
    def _fa4_page_constraint(view):
        try:
            dtype = getattr(view, "kv_cache_dtype", None)
        except Exception:
            dtype = None
        return {"page_size": 1} if dtype == "fp8" else {}
    """
    (sha,) = commit_versions(tmp_path / "repo", [module(body)])
    outcome = only_outcome(evaluate_at(tmp_path / "repo", sha))
    assert outcome.kind == UNEVALUABLE
    line = (
        module(body).splitlines().index('        dtype = getattr(view, "kv_cache_dtype", None)') + 1
    )
    for part in ("view.kv_cache_dtype", f"{PATH}:{line}", "fields:", "sglang-fa4-page-size"):
        assert part in outcome.value, outcome.value


def test_an_unmodelled_platform_attribute_is_unevaluable(tmp_path):
    body = """
    def _fa4_page_constraint(view):
        return {"page_size": 128} if get_platform().device_name == "B200" else {}
    """
    (sha,) = commit_versions(tmp_path / "repo", [module(body)])
    outcome = only_outcome(evaluate_at(tmp_path / "repo", sha))
    assert outcome.kind == UNEVALUABLE and "get_platform().device_name" in outcome.value


def test_an_undefined_name_and_a_forbidden_builtin_are_unevaluable(tmp_path):
    undefined = "def _fa4_page_constraint(view):\n    return {'page_size': MISSING}\n"
    forbidden = "def _fa4_page_constraint(view):\n    return {'page_size': len(open('x').read())}\n"
    shas = commit_versions(tmp_path / "repo", [module(undefined), module(forbidden)])
    first, second = (only_outcome(evaluate_at(tmp_path / "repo", s)) for s in shas)
    assert (
        first.kind == UNEVALUABLE and "MISSING" in first.value and "defined nowhere" in first.value
    )
    assert second.kind == UNEVALUABLE and "builtin open" in second.value


def test_syntax_errors_and_missing_targets(tmp_path):
    repo = tmp_path / "repo"
    shas = commit_versions(
        repo, [module(SIMPLE) + "\ndef broken(:\n", module("def other(v):\n  return {}\n")]
    )
    broken, missing = (only_outcome(evaluate_at(repo, s)) for s in shas)
    assert broken.kind == UNEVALUABLE and "syntax error" in broken.value and "line" in broken.value
    assert missing.kind == ABSENT and "_fa4_page_constraint" in missing.value


def test_a_missing_file_is_absent_and_a_change_from_absent_counts(tmp_path):
    from harness.testing.gitrepo import FixtureRepo

    repo = FixtureRepo(tmp_path / "repo")
    first = repo.commit("no overrides yet", {"README.md": "x\n"})
    second = repo.commit("add overrides", {PATH: module(SIMPLE)})
    outcome = only_outcome(evaluate_at(tmp_path / "repo", first))
    assert outcome.kind == ABSENT and "does not exist" in outcome.value
    (tmp_path / "m.yaml").write_text(fa4_matrix("absent"))  # 2 backends x 2 GPUs x 2 sizes
    result = run_cli("diff", first, second, "--repo", str(tmp_path / "repo"), "--format", "json",
                     "--matrix", str(tmp_path / "m.yaml"))  # fmt: skip
    report = json.loads(result.out)
    assert result.code == 1
    assert len(report["changed"]) == 2 * 2 * 2  # every cell: absent -> a page_size
    absent = {"absent": f"at {first[:10]}: {PATH} does not exist"}
    assert all(c["base"] == absent and "page_size" in c["head"] for c in report["changed"])


def test_the_same_failure_at_both_revisions_cannot_tell(tmp_path):
    top = "from sglang.srt.utils import is_nixl_transport_ready\n"
    body = "def _fa4_page_constraint(view):\n    return {} if is_nixl_transport_ready() else {}\n"
    shas = commit_versions(
        tmp_path / "repo", [module(body, top=top), module(body, top=top) + "\n# x\n"]
    )
    result = run_cli("diff", *shas, "--repo", str(tmp_path / "repo"))
    assert result.code == 4
    assert result.out.count("unevaluable at ") == 2
    assert "Cannot tell: base could not be evaluated; head could not be evaluated" in result.out


def test_exceptions_are_per_cell_outcomes_and_changes(tmp_path):
    raising = """
    def _fa4_page_constraint(view):
        if view.attention_backend == "fa4" and view.speculative_eagle_topk == 8:
            raise ValueError("topk 8 is not supported with fa4")
        return {}
    """
    shas = commit_versions(tmp_path / "repo", [module(SIMPLE), module(raising)])
    result = run_cli("diff", *shas, "--repo", str(tmp_path / "repo"), "--format", "json")
    report = json.loads(result.out)
    errors = [i for i in report["changed"] if "error" in i["head"]]
    assert {e["head"]["error"] for e in errors} == {"ValueError: topk 8 is not supported with fa4"}
    want_errors = [
        c
        for c in oracle.all_cells()
        if c["attention_backend"] == "fa4" and c["speculative_eagle_topk"] == 8
    ]
    assert len(errors) == len(want_errors)
    evaluation = evaluate_at(tmp_path / "repo", shas[1])
    assert ERROR in {o.kind for o in evaluation.table.outcomes}


def test_exploration_agrees_with_running_every_cell(tmp_path):
    tricky = """
    LIMITS = {"sm90": 2, "sm100": 1, "sm120": 0}
    def _order(view):
        if view.page_size is not None and view.page_size > 16:
            return view.prefill_attention_backend
        return view.decode_attention_backend
    def _fa4_page_constraint(view):
        topk = view.speculative_eagle_topk or 0
        platform = "sm100" if get_platform().is_sm100 else ("sm90" if is_sm90() else "sm120")
        if topk > LIMITS[platform]:
            if _order(view) == "triton":
                raise RuntimeError(f"triton with topk {topk}")
            return {"page_size": 1}
        if view.cuda_graph_config.prefill.backend in (Backend.FULL, Backend.BREAKABLE) and use_mla_backend(view):
            return {"page_size": 64}
        return {}
    """
    top = "from sglang.srt.utils import is_sm90_supported as is_sm90\n"
    (sha,) = commit_versions(tmp_path / "repo", [module(tricky, top=top)])
    # every axis, fewer backends (the shipped 349,920 cells, one by one, say no more)
    few = [None, "fa4", "flashmla", "triton"]
    names = ("attention_backend", "decode_attention_backend", "prefill_attention_backend")
    matrix = load_matrix(str(matrix_with_axes(tmp_path, **dict.fromkeys(names, few))))
    assert matrix.size == 4**3 * 2 * 4 * 4 * 3 * 5
    explored = evaluate_at(tmp_path / "repo", sha, matrix)
    exhaustive = evaluate_at(tmp_path / "repo", sha, matrix, exhaustive=True)
    assert compare(matrix, explored.table, exhaustive.table).changed == 0
    assert explored.calls < exhaustive.calls == matrix.size
    assert len({o.kind for o in explored.table.outcomes}) == 3


def _matrix_text() -> str:
    return (shipped_dir() / "sglang-fa4-page-size.yaml").read_text()


def test_binding_forms_value_call_object_axis(tmp_path):
    top = "from sglang.srt.layers import KV_LIMITS, hw, pick\n"
    body = """
    def _fa4_page_constraint(view):
        if hw.vendor.get() == "nvidia" and pick() == "sm120":
            return {"page_size": KV_LIMITS["sm120"]}
        return {}
    """
    (sha,) = commit_versions(tmp_path / "repo", [module(body, top=top)])
    text = _matrix_text().replace(
        "bindings: {}",
        "bindings:\n"
        "  KV_LIMITS: {value: {sm120: 32}}\n"
        "  hw: {object: {vendor: {object: {get: {call: nvidia}}}}}\n"
        "  pick: {call: {axis: platform}}\n",
    )
    matrix = parse_matrix(text, str(tmp_path / "custom.yaml"))
    got = resolved_outcomes(evaluate_at(tmp_path / "repo", sha, matrix).table, matrix)
    assert got == [32 if c["platform"] == "sm120" else c["page_size"] for c in oracle.all_cells()]


def test_a_bad_binding_form_is_a_clear_error(history, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(_matrix_text().replace("bindings: {}", "bindings:\n  x: {lambda: 1}\n"))
    result = run_cli("diff", "--matrix", str(path), "--repo", history.repo())
    line = one_line_error(result)
    assert "bindings.x" in line and "unknown binding form 'lambda'" in line

"""`harness matrix --infer`: a starting matrix written from the code, that evaluates and
agrees with the hand-written FA4 matrix where the two overlap."""

from __future__ import annotations

import json

import yaml

from harness.matrix.load import load_matrix
from tests import oracle
from tests.conftest import one_line_error, run_cli


def infer(history, tmp_path, *args: str):
    out = tmp_path / "inferred.yaml"
    result = run_cli("matrix", "--repo", history.repo(), "--infer", *args, "-o", str(out))
    assert result.code == 0, result.err
    return out


def changed_cells(history, matrix: str) -> dict[str, tuple]:
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--matrix", matrix,
                     "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    assert report["notes"] == {}, report["notes"]  # both revisions evaluate
    return {
        json.dumps(i["cell"], sort_keys=True): (i["base"], i["head"]) for i in report["changed"]
    }


def test_the_inferred_fa4_matrix_names_the_codes_literals(history, tmp_path):
    path = infer(history, tmp_path, "#30835", "--passes", "_fa4_page_constraint")
    data = yaml.safe_load(path.read_text())
    assert data["target"]["function"] == "_fa4_page_constraint"
    axes = data["axes"]
    for name in ("attention_backend", "decode_attention_backend", "prefill_attention_backend"):
        assert axes[name] == [None, "fa4", "other"]  # compared with "fa4" through getattr
    assert axes["use_mla"] == [False, True]
    assert "full" in axes["prefill_cuda_graph"]  # #30835 compares it with Backend.FULL
    assert "sm100" in axes["platform"]
    assert data["fields"] == {"page_size": None, "speculative_eagle_topk": None}
    load_matrix(str(path))  # a matrix harness reads


def test_its_diff_of_30835_equals_the_fa4_matrixs_on_their_common_cells(history, tmp_path):
    path = infer(history, tmp_path, "#30835", "--passes", "_fa4_page_constraint")
    inferred = load_matrix(str(path))
    shipped = oracle.AXES
    fixed = dict(inferred.fields)  # inferred fields are one value of the shipped axes

    def common(cell: dict) -> bool:
        return all(cell.get(k, fixed.get(k)) in shipped[k] for k in shipped) and all(
            cell[k] == v for k, v in fixed.items() if k in cell
        )

    def project(cells: dict, keep) -> dict:
        out = {}
        for key, outcome in cells.items():
            cell = {**fixed, **json.loads(key)}
            if all(k in cell for k in shipped) and common(cell) and keep(cell):
                out[json.dumps({k: cell[k] for k in shipped}, sort_keys=True)] = outcome
        return out

    values = {a.name: set(a.values) for a in inferred.axes}
    in_inferred = lambda cell: all(  # noqa: E731
        cell[k] in values[k] if k in values else cell[k] == fixed[k] for k in shipped
    )
    ours = project(changed_cells(history, str(path)), lambda cell: True)
    theirs = project(changed_cells(history, "sglang-fa4-page-size"), in_inferred)
    assert ours == theirs
    assert len(ours) > 0  # the common cells hold some of #30835's changes


def test_all_passes_in_run_order_and_bad_names(history, tmp_path):
    path = infer(history, tmp_path)  # HEAD, every registered pass
    data = yaml.safe_load(path.read_text())
    assert data["target"]["passes"] == "run-order"  # HEAD has pipeline.py
    path = infer(history, tmp_path, history.shas["helper"])
    assert yaml.safe_load(path.read_text())["target"]["passes"] == "all"  # no pipeline.py yet
    line = one_line_error(run_cli("matrix", "--repo", history.repo(), "--infer",
                                  "--passes", "_no_such_pass"))  # fmt: skip
    assert "--passes: _no_such_pass is not a registered pass" in line
    line = one_line_error(run_cli("matrix", "--passes", "x"))
    assert "--passes and --output go with --infer" in line


def test_a_probe_nothing_binds_is_offered_as_a_binding_to_decide(tmp_path):
    from harness.testing.gitrepo import FixtureRepo

    overrides = (
        "def register_post_process(fn):\n    return fn\n\n\n"
        "@register_post_process\ndef _probed(view):\n"
        "    from sglang.srt.checkpoint_probe import has_fp4_weights\n\n"
        '    if view.quantization == "fp4" and has_fp4_weights(view.model_path):\n'
        '        return {"page_size": 32}\n'
        "    return {}\n"
    )
    FixtureRepo(tmp_path / "repo").commit(
        "one pass", {"python/sglang/srt/arg_groups/overrides.py": overrides}
    )
    out = tmp_path / "m.yaml"
    result = run_cli("matrix", "--repo", str(tmp_path / "repo"), "--infer", "-o", str(out))
    assert result.code == 0, result.err
    text = out.read_text()
    assert "#   has_fp4_weights: {call: null}  # read by _probed" in text
    assert yaml.safe_load(text)["axes"]["quantization"] == [None, "fp4", "other"]


def test_a_pass_that_never_returns_is_one_line_within_the_time_limit(tmp_path):
    import time

    from harness.testing.gitrepo import FixtureRepo

    overrides = (
        "def register_post_process(fn):\n    return fn\n\n\n"
        "@register_post_process\ndef _spin(view):\n"
        "    while not view.page_size:\n        pass\n    return {}\n"
    )
    FixtureRepo(tmp_path / "repo").commit(
        "spin", {"python/sglang/srt/arg_groups/overrides.py": overrides}
    )
    start = time.monotonic()
    result = run_cli("matrix", "--repo", str(tmp_path / "repo"), "--infer", "--time-limit", "1")
    line = one_line_error(result)
    assert time.monotonic() - start < 10
    assert "cannot infer a matrix" in line and "ran past 1 s" in line

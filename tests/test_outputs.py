"""A matrix with several output fields: outcomes, diffs and summaries compare all of them."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from harness import gitio
from harness.matrix.load import load_matrix
from harness.report.baseline import read
from harness.scan.compare import compare
from harness.scan.versions import Versions
from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.helpers import commit_versions, module

MATRIX = """\
name: two-outputs
target:
  path: python/sglang/srt/arg_groups/overrides.py
  function: _fa4_page_constraint
  output: [page_size, attention_backend]
world: sglang
axes:
  attention_backend: [null, fa4, triton]
  platform: [sm90, sm100]
  page_size: [null, 16, 128]
"""

V1 = """
def _fa4_page_constraint(view):
    if view.attention_backend == "fa4" and get_platform().is_sm100:
        return {"page_size": 128}
    return {}
"""
V2 = """
def _fa4_page_constraint(view):
    if view.attention_backend == "fa4" and get_platform().is_sm100:
        return {"page_size": 128}
    if view.attention_backend == "fa4":
        return {"attention_backend": "triton", "page_size": 16}
    return {}
"""
AXES = {"attention_backend": [None, "fa4", "triton"], "platform": ["sm90", "sm100"],
        "page_size": [None, 16, 128]}  # fmt: skip


def expected(cell: dict, version: int) -> dict:
    """What each version resolves to, written from the function texts above."""
    out = {"page_size": cell["page_size"], "attention_backend": cell["attention_backend"]}
    if cell["attention_backend"] == "fa4" and cell["platform"] == "sm100":
        out["page_size"] = 128
    elif cell["attention_backend"] == "fa4" and version == 2:
        out.update(attention_backend="triton", page_size=16)
    return out


def setup(tmp_path: Path) -> tuple[Path, list[str], Path]:
    matrix = tmp_path / "two.yaml"
    matrix.write_text(MATRIX)
    shas = commit_versions(tmp_path / "repo", [module(V1), module(V2)])
    return tmp_path / "repo", shas, matrix


def test_a_diff_compares_every_output_and_names_the_field_that_changed(tmp_path):
    repo, shas, matrix = setup(tmp_path)
    result = run_cli("diff", *shas, "--repo", str(repo), "--matrix", str(matrix),
                     "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    cells = [dict(zip(AXES, v, strict=True)) for v in itertools.product(*AXES.values())]
    want = {json.dumps(c): (expected(c, 1), expected(c, 2)) for c in cells
            if expected(c, 1) != expected(c, 2)}  # fmt: skip
    got = {json.dumps(i["cell"]): (i["base"], i["head"]) for i in report["changed"]}
    assert result.code == 1 and got == want and len(want) == 3  # fa4 on sm90, each input page
    assert report["target"]["outputs"] == ["page_size", "attention_backend"]
    (rule,) = report["summary"]
    assert rule["transition"] == (
        "page_size: input page_size -> 16; attention_backend: input attention_backend -> triton"
    )
    text = run_cli("diff", *shas, "--repo", str(repo), "--matrix", str(matrix)).out
    assert "3 of 18 cells change at least one of 2 fields; by field:" in text
    for field in ("page_size", "attention_backend"):  # the rules, field by field
        count = sum(base[field] != head[field] for base, head in want.values())
        assert f"\n{field}: {count} cells," in text


def test_an_explicit_value_equal_to_the_input_is_no_change(tmp_path):
    repo, shas, matrix = setup(tmp_path)
    result = run_cli("diff", *shas, "--repo", str(repo), "--matrix", str(matrix),
                     "--format", "json", "--where", "page_size=16")  # fmt: skip
    report = json.loads(result.out)
    (item,) = report["changed"]  # only attention_backend changes where the input page is 16
    assert item["base"] == {"page_size": 16, "attention_backend": "fa4"}
    assert item["head"] == {"page_size": 16, "attention_backend": "triton"}
    assert report["summary"][0]["transition"] == (
        "page_size: input page_size -> 16; attention_backend: input attention_backend -> triton"
    )


def test_a_baseline_of_several_outputs_reads_back_the_same_table(tmp_path):
    repo, shas, matrix_file = setup(tmp_path)
    baseline = tmp_path / "baseline.json"
    result = run_cli("snapshot", shas[1], "-o", str(baseline), "--repo", str(repo),
                     "--matrix", str(matrix_file))  # fmt: skip
    assert result.code == 0, result.err
    assert '"declares"' in baseline.read_text()
    matrix = load_matrix(str(matrix_file))
    handle = gitio.open_repo(str(repo))
    table = Versions(handle, matrix).at(gitio.resolve(handle, shas[1])).table
    assert compare(matrix, table, read(str(baseline), matrix)).changed == 0


def test_every_output_must_be_an_axis_or_a_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = MATRIX.replace("[page_size, attention_backend]", "[page_size, kv_dtype]")
    bad.write_text(text.replace("world: sglang", "world: plain"))
    repo, shas, _ = setup(tmp_path)
    result = run_cli("diff", *shas, "--repo", str(repo), "--matrix", str(bad))
    assert result.code == 2 and "kv_dtype must also be an axis or a field" in result.err


def test_in_the_sglang_world_an_output_nothing_declares_is_refused_when_it_runs(tmp_path):
    repo, shas, matrix = setup(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        matrix.read_text().replace("[page_size, attention_backend]", "[page_size, kv_dtype]")
    )
    result = run_cli("diff", *shas, "--repo", str(repo), "--matrix", str(bad), "--format", "json")
    note = json.loads(result.out)["notes"]["base"]
    assert "view.kv_dtype" in note and "add it under `fields:`" in note


TYPED = """\
name: typed
target: {path: cfg.py, function: settle, output: [workers, flag]}
world: plain
axes:
  a: [0, 1, 2]
  workers: [1, 2]
fields:
  flag: null
"""


def test_values_equal_in_python_but_of_other_types_are_other_outcomes_with_several_outputs(
    tmp_path,
):
    """1, 1.0 and true are three values of a field however many outputs a matrix has: with
    two outputs the declared values travel together, and neither the revision's own table
    nor the comparison may take `flag: true` for `flag: 1`."""
    repo = FixtureRepo(tmp_path / "repo")
    (tmp_path / "typed.yaml").write_text(TYPED)
    base = repo.commit("base", {"cfg.py": (
        "def settle(config):\n"
        "    if config.a == 0:\n        return {'flag': True}\n"
        "    if config.a == 1:\n        return {'flag': 1}\n"
        "    return {'flag': 1.0, 'workers': 2}\n")})  # fmt: skip
    head = repo.commit("head", {"cfg.py": (
        "def settle(config):\n    return {'flag': 1, 'workers': 2 if config.a == 2 else None}\n"
    )})  # fmt: skip
    result = run_cli("diff", base, head, "--repo", str(repo.root), "--matrix",
                     str(tmp_path / "typed.yaml"), "--format", "json")  # fmt: skip
    got = {(i["cell"]["a"], i["cell"]["workers"]): (i["base"], i["head"])
           for i in json.loads(result.out)["changed"]}  # fmt: skip
    want = {}
    for a, workers in itertools.product(range(3), (1, 2)):
        before = {"flag": [True, 1, 1.0][a], "workers": 2 if a == 2 else workers}
        after = {"flag": 1, "workers": 2 if a == 2 else None}
        if any(type(before[f]) is not type(after[f]) or before[f] != after[f] for f in before):
            want[(a, workers)] = (before, after)
    assert result.code == 1
    assert {k: tuple(_typed(s) for s in v) for k, v in got.items()} == {
        k: tuple(_typed(s) for s in v) for k, v in want.items()
    }


def _typed(values: dict) -> tuple:
    return tuple(sorted((f, type(v).__name__, v) for f, v in values.items()))

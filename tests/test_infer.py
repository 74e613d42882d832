"""`harness matrix --infer`: a starting matrix written from the code, that evaluates and
agrees with the hand-written FA4 matrix where the two overlap."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

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
    assert time.monotonic() - start < 30  # the 1 s limit held: unheld, the default is 60 s
    assert "cannot infer a matrix" in line and "ran past 1 s" in line


# --- what --infer writes, diff reads ------------------------------------------------

ODD_PASS = """\
from sglang.srt.arg_groups.registry import register_post_process


@register_post_process
def _model_page(view):
    if model_config_of(view).hf_config.model_type == "deepseek_v41" and (
        view.attention_backend == "fa4"
    ):
        return {"page_size": SIZES[0]}
    if envs.SGLANG_ODD.get() == "on" and view.load_format == "1.0":
        return {"page_size": SIZES[1]}
    if getattr(view, "odd-name", None) == "x":
        return {"page_size": SIZES[2]}
    if view.max_total == 1e20:
        return {"page_size": SIZES[3]}
    return {}
"""


def odd_pass(sizes: tuple[int, ...]) -> str:
    from tests.helpers import module

    return module(f"SIZES = {sizes!r}\n\n\n" + ODD_PASS)


def odd_changes(cell: dict) -> bool:
    """Where the head (every size changed) differs from the base: any condition holds, read
    from the pass's text, not from the harness."""
    return (
        (cell["hf_config.model_type"] == "deepseek_v41" and cell["attention_backend"] == "fa4")
        or (cell["SGLANG_ODD"] == "on" and cell["load_format"] == "1.0")
        or cell["odd-name"] == "x"
        or cell["max_total"] == 1e20
    )


def test_world_inputs_with_dots_and_odd_literals_load_and_reach_the_code(tmp_path):
    """A model config attribute (a dotted world input), an environment variable compared with
    a YAML word, a string that YAML reads as a float, a float whose successor is itself plus
    one, and a view attribute that is no identifier: the file loads, and diff's changed
    cells are exactly those the pass's conditions select."""
    from harness.matrix.cells import iter_cells
    from tests.helpers import commit_versions

    root = tmp_path / "repo"
    base, head = commit_versions(root, [odd_pass((64, 1, 2, 3)), odd_pass((128, 5, 6, 7))])
    path = tmp_path / "m.yaml"
    done = run_cli("matrix", "--repo", str(root), "--infer", head, "-o", str(path))
    assert done.code == 0, done.err
    matrix = load_matrix(str(path))
    axes = {a.name: a.values for a in matrix.axes}
    assert axes["hf_config.model_type"] == (None, "deepseek_v41", "other")
    assert axes["SGLANG_ODD"] == (None, "on", "other")  # "on" stays a string
    assert axes["load_format"] == (None, "1.0", "other")  # and "1.0" too
    assert axes["max_total"][:2] == (None, 1e20) and axes["max_total"][2] > 1e20
    assert "odd-name" not in axes and matrix.fields["odd-name"] is None  # held, a field
    (line,) = [line for line in path.read_text().splitlines() if "odd-name" in line]
    assert "[null, x, other]" in line  # the values it would have as an axis, beside it
    result = run_cli("diff", base, head, "--repo", str(root), "--matrix", str(path),
                     "--format", "json")  # fmt: skip
    assert result.code == 1, result.err
    report = json.loads(result.out)
    assert report["notes"] == {}, report["notes"]  # every cell evaluates on both sides
    changed = {json.dumps(i["cell"], sort_keys=True) for i in report["changed"]}
    expected = set()
    for cell in iter_cells(matrix.full_masks()):
        values = {a.name: a.values[d] for a, d in zip(matrix.axes, cell, strict=True)}
        if odd_changes({**matrix.fields, **values}):
            expected.add(json.dumps(values, sort_keys=True))
    assert changed == expected
    assert len(expected) > 0


NAMES = st.one_of(
    st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True),
    st.from_regex(r"(hf_config|model_config|platform)\.[a-z_]{1,6}", fullmatch=True),
    st.sampled_from(["on", "null", "yes", "True", "a-b", "a b", "", "1x", "a: b", "#c",
                     "a.b", "é", "\x00", "x\ny", "page_size",
                     "n" * 1100, "é" * 300]),  # longer than YAML's `name:` key, as written
    st.text(max_size=4),
)  # fmt: skip
LITERALS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(), st.floats(),
    st.sampled_from([1e20, 2**53, "on", "1.0", "other", "", "a: b"]), st.text(max_size=4),
)  # fmt: skip


@st.composite
def findings(draw):
    """What runs on symbols could report: any names, any plain literals, any messages."""
    from harness.closure.defaults import Default, Defaults
    from harness.engine.worlds import WORLDS
    from harness.scan.infer import Found

    read = draw(st.lists(NAMES, max_size=8, unique=True))
    inputs = draw(st.lists(NAMES, max_size=4, unique=True))
    seen = read + inputs
    values = {n: draw(st.lists(LITERALS, min_size=1, max_size=14)) for n in seen
              if draw(st.booleans())}  # fmt: skip
    world = WORLDS["sglang"]
    found = Found(
        values={n: [v for i, v in enumerate(vs) if not any(same(v, w) for w in vs[:i])]
                for n, vs in values.items()},
        tested=draw(st.lists(st.sampled_from(seen), unique=True)) if seen else [],
        read=read, inputs=inputs,
        axes=draw(st.lists(st.sampled_from(sorted(world.suggested)), unique=True)),
        problems=draw(st.dictionaries(NAMES, st.text(max_size=30), max_size=2)),
        unbound=draw(st.dictionaries(NAMES, NAMES, max_size=2)),
        readers={n: draw(st.integers(0, 3)) for n in seen},
    )  # fmt: skip
    defaults = Defaults({n: Default(draw(st.one_of(LITERALS, st.just([1]))), "server_args.py:1")
                         for n in seen if draw(st.booleans())})  # fmt: skip
    outputs = tuple(draw(st.lists(NAMES.filter(bool), min_size=1, max_size=3, unique=True)))
    return world, found, defaults, outputs, draw(st.integers(1, 10_000))


def same(a, b) -> bool:
    return type(a) is type(b) and (a == b or (a != a and b != b))


@settings(max_examples=200, deadline=None)
@given(findings())
def test_whatever_the_runs_found_the_file_loads_with_it(case):
    """The file loads as diff loads it, within the cell limit, and every input is in it:
    an axis with the layout's values, a field at the layout's value (an axis held at one,
    only when it could not be an axis or would not fit), or a comment."""
    from harness.matrix.load import parse_matrix
    from harness.matrix.write import scalar
    from harness.report.inferred_matrix import render
    from harness.scan.infer import layout

    world, found, defaults, outputs, max_cells = case
    target = ["  path: a.py", "  passes: all", f"  output: {scalar(outputs[0])}"]
    text = render("inferred", target, world, found, defaults, outputs[:1], {}, max_cells)
    matrix = parse_matrix(text, "inferred.yaml", max_cells=max_cells)
    assert matrix.size <= max_cells and matrix.bindings == {}
    axes, fields = layout(world, found, defaults, outputs[:1])
    written = {a.name: list(a.values) for a in matrix.axes}
    for name, values in axes.items():
        if name in written and len(written[name]) == len(values):
            assert all(same(a, b) for a, b in zip(written[name], values, strict=True))
        elif name in written:  # held, then the one axis: at its field's value
            assert len(matrix.axes) == 1 and len(written[name]) == 1 and len(values) > max_cells
        elif name in matrix.fields:
            fits = all(p.isidentifier() for p in name.split("."))
            assert not fits or matrix.size * len(values) > max_cells
        else:
            assert "." in name and name in found.read  # a view attribute with a dot
    for name, (value, _) in fields.items():
        if name in matrix.fields:
            assert same(matrix.fields[name], value)
        elif name in written:  # the one axis, at the field's value
            assert len(matrix.axes) == 1 and len(written[name]) == 1
            assert same(written[name][0], value)
        else:
            assert "." in name and name in found.read


def test_every_pass_at_head_within_the_cell_limit_diffs(history, tmp_path):
    """The whole resolution, written within --max-cells: the file loads, holds no more cells,
    names what it held back with its values, and diff evaluates it (a change, no change,
    or cannot tell; never bad input)."""
    whole = load_matrix(str(infer(history, tmp_path)))
    sizes = sorted(len(a.values) for a in whole.axes)
    limit = sizes[-1] * sizes[-2] - 1  # room for the largest axis, not with the next one
    path = infer(history, tmp_path, "--max-cells", str(limit))
    matrix = load_matrix(str(path), max_cells=limit)
    assert matrix.size <= limit < whole.size
    kept = {a.name for a in matrix.axes}
    held = [a for a in whole.axes if a.name not in kept]
    assert held and all(a.name in matrix.fields for a in held)
    text = path.read_text()
    for axis in held:
        (line,) = [line for line in text.splitlines() if line.startswith(f"  {axis.name}: ")]
        assert f"over --max-cells {limit:,}" in line
    for matrix_path in (path, tmp_path / "inferred.yaml"):
        result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--matrix",
                         str(matrix_path))  # fmt: skip
        assert result.code in (0, 1, 4), result.err


def test_no_cells_to_write_is_one_line():
    line = one_line_error(run_cli("matrix", "--infer", "--max-cells", "0"))
    assert "--max-cells 0: a matrix has at least one cell" in line


RELEASES = os.environ.get("HARNESS_TEST_SGLANG_RELEASES")  # a repository of SGLang's releases
RELEASE_TAGS = ("v0.5.16", "v0.5.18", "v0.5.19", "v0.5.20", "v0.5.21", "v0.5.22", "v0.5.23")


@pytest.mark.skipif(not RELEASES, reason="set HARNESS_TEST_SGLANG_RELEASES to a repository "
                    "built by sglang-release-history")  # fmt: skip
@pytest.mark.parametrize("tag", RELEASE_TAGS)
@pytest.mark.parametrize(
    "passes",
    [
        (),
        ("--passes", "_fa4_page_constraint"),
        ("--passes", "_attention_backend_default,_page_size_default"),
    ],
)
def test_on_real_releases_what_infer_writes_diff_evaluates(tag, passes, tmp_path):
    path = tmp_path / "m.yaml"
    done = run_cli("matrix", "--infer", tag, "--repo", RELEASES, *passes, "-o", str(path))
    assert done.code == 0, done.err
    assert load_matrix(str(path)).size <= 250_000  # --infer's default limit
    result = run_cli("diff", "v0.5.18", "v0.5.23", "--repo", RELEASES, "--matrix", str(path))
    assert result.code in (0, 1, 4), result.err

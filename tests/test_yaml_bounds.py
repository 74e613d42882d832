"""A matrix file is bounded while it is parsed: YAML aliases cannot stand for a huge tree,
an axis cannot hold more values than allowed, no list or mapping grows without end, and
a file past its size is not parsed at all. Each refusal is one line (exit 2), fast,
naming the file and line; a matrix within the bounds, aliases included, still loads."""

from __future__ import annotations

import json
import time

import pytest

from harness.matrix.model import MAX_VALUES
from harness.matrix.strict_yaml import MAX_ITEMS, MAX_NODES
from tests.conftest import one_line_error, run_cli

HEAD = """name: bounded
target: {path: python/sglang/srt/arg_groups/overrides.py, function: _fa4_page_constraint, output: page_size}
world: sglang
"""
AXES = "axes:\n  platform: [sm90, sm100]\n  page_size: [null, 1, 128]\n"


def diff_with(history, path) -> tuple[str, float]:
    """The one line `harness diff` gives for the matrix at `path` (the default cache is on,
    so the document would be copied as JSON if it parsed), and the CPU seconds this
    process spent on it (the matrix is read in-process; a busy machine's wall clock says
    nothing of it)."""
    started = time.process_time()
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--matrix", str(path))
    return one_line_error(result), time.process_time() - started


def alias_bomb(levels: int = 10, width: int = 10) -> str:
    """`levels` anchors, each a list of `width` aliases of the one before: width**levels
    scalars once expanded, in about 1 KB."""
    lines = ["  a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"  a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "fields:\n" + "\n".join(lines) + "\n"


def test_an_alias_bomb_is_one_line_and_fast(history, tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(HEAD + AXES + alias_bomb())
    assert path.stat().st_size < 1100
    assert MAX_NODES < 10**10  # what the file stands for, against the bound
    line, seconds = diff_with(history, path)
    assert str(path) in line and f"{MAX_NODES:,} nodes" in line and "aliases" in line
    assert seconds < 5


def test_an_alias_inside_the_node_it_names_is_one_line(history, tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text(HEAD + AXES + "fields:\n  loop: &me [1, *me]\n")
    line, _ = diff_with(history, path)
    assert f"{path}:{(HEAD + AXES).count(chr(10)) + 2}:" in line and "loop" in line


@pytest.mark.parametrize("form", ["list", "values"])
def test_an_axis_past_its_values_is_refused_where_the_parser_reaches_it(history, tmp_path, form):
    """80,000 values, one a line: refused at the first value past the cap, whose line is
    the header's lines, the axis's own lines and MAX_VALUES + 1 further."""
    header = HEAD + "axes:\n  platform: [sm90, sm100]\n"
    opening = "  page_size:\n" if form == "list" else "  page_size:\n    values:\n"
    values = "".join(f"    - {n}\n" for n in range(80_000))
    path = tmp_path / "wide.yaml"
    path.write_text(header + opening + values)
    expected_line = header.count("\n") + opening.count("\n") + MAX_VALUES + 1
    line, seconds = diff_with(history, path)
    assert f"{path}:{expected_line}:" in line, line
    assert f"axes.page_size: more than {MAX_VALUES} values" in line
    assert seconds < 5  # a full parse of the file takes far longer


def test_an_axis_of_exactly_the_cap_loads(tmp_path):
    path = tmp_path / "full.yaml"
    values = ", ".join(str(n) for n in range(MAX_VALUES))
    path.write_text(HEAD + f"axes:\n  page_size: [{values}]\n")
    result = run_cli("matrix", "--matrix", str(path), "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["cells"] == MAX_VALUES


@pytest.mark.parametrize("shape", ["list", "mapping"])
def test_any_other_list_or_mapping_is_bounded_too(history, tmp_path, shape):
    items = MAX_ITEMS + 5
    if shape == "list":
        body = "fields:\n  many: [" + ", ".join("1" for _ in range(items)) + "]\n"
    else:
        body = "bindings: {" + ", ".join(f"k{n}: 1" for n in range(items)) + "}\n"
    path = tmp_path / f"many-{shape}.yaml"
    path.write_text(HEAD + AXES + body)
    line, _ = diff_with(history, path)
    assert f"more than {MAX_ITEMS:,}" in line and str(path) in line


def test_a_file_past_its_size_is_refused_before_parsing(history, tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text(HEAD + AXES + "description: '" + "x" * (3 << 20) + "'\n")
    line, seconds = diff_with(history, path)
    assert "more than 1 MB" in line and seconds < 5


def test_aliases_within_the_bounds_still_work(tmp_path):
    """An axis written once and reused by alias is the same matrix as one written twice."""
    backends = "[null, fa3, fa4]"
    by_alias = tmp_path / "alias.yaml"
    by_alias.write_text(
        HEAD + f"axes:\n  attention_backend: &backends {backends}\n"
        "  decode_attention_backend: *backends\n  page_size: [null, 1]\n"
    )
    written = tmp_path / "written.yaml"
    written.write_text(
        HEAD + f"axes:\n  attention_backend: {backends}\n"
        f"  decode_attention_backend: {backends}\n  page_size: [null, 1]\n"
    )
    shown = [run_cli("matrix", "--matrix", str(p), "--format", "json") for p in (by_alias, written)]
    assert all(r.code == 0 for r in shown), [r.err for r in shown]
    assert json.loads(shown[0].out) == json.loads(shown[1].out)
    assert json.loads(shown[0].out)["cells"] == 3 * 3 * 2

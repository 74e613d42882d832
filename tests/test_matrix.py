"""`harness matrix`: the default matrix is exactly the one the issue specifies."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests import oracle
from tests.conftest import one_line_error, run_cli


def test_default_matrix_axes_values_and_count():
    result = run_cli("matrix", "--format", "json")
    described = json.loads(result.out)
    total = 1
    for values in oracle.AXES.values():
        total *= len(values)
    assert result.code == 0
    assert described == {
        "format_version": 1,
        "name": "sglang-fa4-page-size",
        "axes": oracle.AXES,
        "cells": total,
    }
    assert list(described["axes"]) == oracle.NAMES  # the order is the cell order
    assert total == 349_920


def test_text_lists_axes_and_count():
    result = run_cli("matrix")
    assert "cells: 349,920" in result.out
    assert "page_size" in result.out and "null, 1, 16, 64, 128" in result.out


def test_cells_stream_every_combination_in_order():
    result = run_cli("matrix", "--cells", "--format", "json")
    lines = result.out.splitlines()
    assert len(lines) == 349_920
    for n, cell in enumerate(oracle.all_cells()):
        if n % 997 == 0 or n == len(lines) - 1:  # a spread of cells, and the last
            assert json.loads(lines[n]) == cell


def test_cells_in_text_and_filtered():
    result = run_cli(
        "matrix", "--cells", "--where", "platform=sm100", "--where", "use_mla=false,true"
    )
    lines = result.out.splitlines()
    assert len(lines) == 349_920 // 3
    assert all("platform=sm100" in line for line in lines)
    assert lines[0].startswith("attention_backend=null decode_attention_backend=null")


def test_a_matrix_file_by_path(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: mine\n"
        "target: {path: a.py, function: f, output: page_size}\n"
        "axes:\n  page_size: [null, 1]\n  mode: [a, b, c]\n"
    )
    result = run_cli("matrix", "--matrix", str(path), "--format", "json")
    assert json.loads(result.out) == {
        "format_version": 1,
        "name": "mine",
        "axes": {"page_size": [None, 1], "mode": ["a", "b", "c"]},
        "cells": 6,
    }


# --- writing matrix files: what is written reads back as it was -----------------------

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
    st.text(), st.sampled_from(["on", "No", "null", "~", "1.0", "1e3", "0x1F", "10:20",
                                "a: b", "#c", "- d", "[e", "", " f", "\x85", "\u2028"]),
)  # fmt: skip


def same(a, b) -> bool:
    return type(a) is type(b) and (a == b or (a != a and b != b))


@given(SCALARS, SCALARS, st.text())
def test_a_written_name_value_and_comment_read_back_as_they_were(name, value, note):
    from harness.matrix.strict_yaml import load
    from harness.matrix.write import comment, flow_list, key, scalar

    if not isinstance(name, str):
        name = str(name)
    text = f"{key(name)} {scalar(value)}  # {comment(note)}\nlist: {flow_list([value, 1])}\n"
    assert "\n" not in comment(note)
    document = load(text, "written.yaml")
    assert list(document) == [name, "list"]
    assert same(document[name], value)
    assert same(document["list"][0], value) and document["list"][1] == 1


@pytest.mark.parametrize("name", ["a" * 1024, "a" * 1025, "\u0100" * 170, "\u0100" * 171,
                                  "b" * 5000])  # fmt: skip
def test_a_name_too_long_for_a_plain_yaml_key_reads_back_in_a_nested_mapping(name):
    """YAML reads a `name:` key of at most 1024 characters ("\\u0100" is six of them, and
    170 of those in quotes are 1022); longer names read back all the same."""
    from harness.matrix.strict_yaml import load
    from harness.matrix.write import key

    document = load(f"fields:\n{key(name, '  ')} 1  # a comment\n  other: 2\n", "long.yaml")
    assert document == {"fields": {name: 1, "other": 2}}


@given(st.floats())
def test_floats_read_back_even_nan_and_infinities(value):
    from harness.matrix.strict_yaml import load
    from harness.matrix.write import scalar

    assert same(load(f"x: {scalar(value)}", "written.yaml")["x"], value)


def test_axis_names_are_identifiers_or_dotted_ones(tmp_path):
    path = tmp_path / "dotted.yaml"
    path.write_text(
        "name: dotted\ntarget: {path: a.py, function: f, output: page_size}\nworld: sglang\n"
        "axes:\n  hf_config.model_type: [null, llama]\n  page_size: [null, 1]\n"
    )
    result = run_cli("matrix", "--matrix", str(path), "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["axes"] == {
        "hf_config.model_type": [None, "llama"], "page_size": [None, 1]
    }  # fmt: skip
    for bad in ("hf_config..x", ".x", "x.", "a-b", "1x", "a.1b"):
        path.write_text(path.read_text().replace("hf_config.model_type", bad))
        line = one_line_error(run_cli("matrix", "--matrix", str(path)))
        assert f"axes.{bad}: axis names must be identifiers" in line
        path.write_text(path.read_text().replace(bad, "hf_config.model_type"))


def test_a_file_named_like_a_shipped_matrix_never_stands_in_for_it(tmp_path, monkeypatch):
    """A pull request's checkout is the working directory of the Actions job: a file
    there named `sglang-fa4-page-size` must not replace the shipped matrix."""
    from harness.matrix.load import load_matrix, shipped_dir

    shipped = (shipped_dir() / "sglang-fa4-page-size.yaml").read_text()
    planted = shipped.replace("_fa4_page_constraint", "_some_other_pass")
    assert planted != shipped
    (tmp_path / "sglang-fa4-page-size").write_text(planted)
    monkeypatch.chdir(tmp_path)
    assert load_matrix("sglang-fa4-page-size").target.passes == ("_fa4_page_constraint",)
    assert load_matrix("./sglang-fa4-page-size").target.passes == ("_some_other_pass",)

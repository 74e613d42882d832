"""`harness matrix`: the default matrix is exactly the one the issue specifies."""

from __future__ import annotations

import json

from tests import oracle
from tests.conftest import run_cli


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

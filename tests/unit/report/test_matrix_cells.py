"""`harness matrix --cells --format json`: each line is the JSON object of one cell, byte
for byte as `json.dumps` writes the dict {axis: value} (the renderer joins precomputed
pieces instead of encoding each cell)."""

from __future__ import annotations

import itertools
import json

from harness.matrix.load import parse_matrix
from harness.report.matrix import cell_lines

AXES = {
    "backend": [None, "fa4", 'quote"d', "caf\u00e9", "tab\there"],
    "use_mla": [False, True],
    "ratio": [0.5, "1e-07", 1.5e-7, 3],
    "hf_config.model_type": ["x"],
}


def matrix():
    lines = ["name: awkward", "target: {path: x.py, function: f, output: out}", "axes:"]
    lines += [f"  {json.dumps(name)}: {json.dumps(values)}" for name, values in AXES.items()]
    return parse_matrix("\n".join(lines) + "\n", "awkward.yaml")


def axes(m) -> dict[str, list]:
    """The matrix's axes, as it read them."""
    return {axis.name: list(axis.values) for axis in m.axes}


def test_each_json_line_is_what_json_dumps_writes_for_the_cell():
    m = matrix()
    assert axes(m) == AXES  # a string that looks like a number stays one
    expected = [
        json.dumps(dict(zip(axes(m), values, strict=True)))
        for values in itertools.product(*axes(m).values())
    ]
    assert list(cell_lines(m, m.full_masks(), "json")) == expected


def test_a_where_cube_keeps_its_cells_in_order():
    m = matrix()
    masks = list(m.full_masks())
    masks[0] = 0b00110  # fa4 and 'quote"d' only
    kept = [v for n, v in enumerate(AXES["backend"]) if masks[0] >> n & 1]
    expected = [
        json.dumps(dict(zip(axes(m), values, strict=True)))
        for values in itertools.product(kept, *list(axes(m).values())[1:])
    ]
    assert list(cell_lines(m, tuple(masks), "json")) == expected

"""Cells and cubes against brute force: index <-> cell, runs, sizes, --where."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.matrix.cells import cube_runs, cube_size, first_cell, iter_cells, parse_where
from tests.unit.tables import radices, small_matrix


@st.composite
def matrix_and_cube(draw):
    matrix = small_matrix(draw(radices))
    masks = tuple(draw(st.integers(1, full)) for full in matrix.full_masks())
    return matrix, masks


def brute_cells(matrix, masks) -> list[tuple[int, ...]]:
    allowed = [[d for d in range(r) if masks[n] >> d & 1] for n, r in enumerate(matrix.radices)]
    return list(itertools.product(*allowed))


@settings(max_examples=200, deadline=None)
@given(matrix_and_cube())
def test_cubes_agree_with_brute_force(case):
    matrix, masks = case
    cells = brute_cells(matrix, masks)
    assert list(iter_cells(masks)) == cells
    assert cube_size(masks) == len(cells)
    assert first_cell(masks) == cells[0]
    starts, length = cube_runs(matrix, masks)
    from_runs = [start + j for start in starts for j in range(length)]
    assert from_runs == sorted(matrix.index(c) for c in cells)
    for index in range(matrix.size):
        assert matrix.index(matrix.cell(index)) == index


def test_where_selects_values_as_written_in_the_matrix_file():
    matrix = small_matrix([3, 2])
    assert parse_where(matrix, ["a0=0,2", "page_size=16"]) == (0b101, 0b11, 0b010)
    with pytest.raises(HarnessError, match="no axis 'zz'"):
        parse_where(matrix, ["zz=1"])
    with pytest.raises(HarnessError, match="unknown value '7' for axis a0"):
        parse_where(matrix, ["a0=7"])
    with pytest.raises(HarnessError, match="given twice"):
        parse_where(matrix, ["a0=1", "a0=2"])

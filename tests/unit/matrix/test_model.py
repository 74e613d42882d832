"""The matrix model: naming a value, and a cell's index and values."""

from __future__ import annotations

import itertools

import pytest

from harness.errors import HarnessError
from harness.matrix.model import same_value
from tests.unit.tables import small_matrix


def test_a_value_is_named_as_the_matrix_file_writes_it_and_an_unknown_one_lists_them_all():
    matrix = small_matrix([2])
    axis = matrix.axes[matrix.axis_index("page_size")]
    assert [axis.index_of(text) for text in ("1", "16", "128")] == [0, 1, 2]
    with pytest.raises(HarnessError) as refused:
        axis.index_of("64")
    assert str(refused.value) == "unknown value '64' for axis page_size (values: 1, 16, 128)"


def test_cells_are_numbered_with_the_last_axis_fastest_and_read_back():
    matrix = small_matrix([2, 3])  # a0: 0..1, a1: 0..2, page_size: 1, 16, 128
    cells = list(itertools.product(range(2), range(3), range(3)))
    assert [matrix.cell(i) for i in range(matrix.size)] == cells
    assert [matrix.index(cell) for cell in cells] == list(range(18))
    assert matrix.values_of((1, 2, 0)) == {"a0": 1, "a1": 2, "page_size": 1}


@pytest.mark.parametrize(
    "a, b, same",
    [
        (1, 1, True),
        (1, True, False),
        (1, 1.0, False),
        (0.0, -0.0, True),  # equal floats
        ([1, "x"], [1, "x"], True),
        ([1], [True], False),  # inside a list too
        ([[1, 2]], [[1, 2.0]], False),  # and deeper
        ([0.0], [-0.0], True),  # as at the top
        ((1,), [1], False),
        ({"k": 1}, {"k": 1}, True),
        ({"k": 1}, {"k": True}, False),
        ({1: "a"}, {True: "a"}, False),  # keys Python finds equal
        ([1], [1, 2], False),
    ],
)
def test_values_are_the_same_when_equal_and_of_the_same_types_all_the_way_down(a, b, same):
    assert same_value(a, b) is same and same_value(b, a) is same

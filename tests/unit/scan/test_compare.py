"""Comparison: the changed cells are exactly those whose page_size differs, and the rules
cover them exactly once, each with its cells' own transition."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.engine.outcome import KEPT, VALUE, Outcome
from harness.matrix.cells import iter_cells
from harness.scan.compare import any_change, changed_only, compare, part
from tests.unit.tables import matrix_and_tables, resolved, small_matrix, table


def cells_of(matrix, masks) -> set[int]:
    return {matrix.index(cell) for cell in iter_cells(masks)}


@settings(max_examples=150, deadline=None)
@given(matrix_and_tables())
def test_changed_cells_are_those_whose_result_differs(case):
    matrix, base, head = case
    expected = {
        i
        for i in range(matrix.size)
        if resolved(matrix, base.outcome_at(i), i) != resolved(matrix, head.outcome_at(i), i)
    }
    comparison = compare(matrix, base, head)
    assert set(comparison.indices) == expected
    assert any_change(matrix, base, head) == bool(expected)


@settings(max_examples=150, deadline=None)
@given(matrix_and_tables())
def test_the_rule_cover_is_exact_and_disjoint(case):
    matrix, base, head = case
    comparison = compare(matrix, base, head)
    covered: list[int] = []
    for rule in comparison.rules:
        inside = cells_of(matrix, rule.masks)
        assert rule.cells == len(inside)
        for i in inside:  # every cell of a rule has the rule's transition
            assert base.outcome_at(i).key == rule.base.key
            assert head.outcome_at(i).key == rule.head.key
        covered.extend(inside)
    assert len(covered) == len(set(covered))  # disjoint
    assert set(covered) == set(comparison.indices)  # exact


@settings(max_examples=80, deadline=None)
@given(matrix_and_tables(), st.data())
def test_where_limits_the_comparison_to_its_cube(case, data):
    matrix, base, head = case
    masks = tuple(data.draw(st.integers(1, full)) for full in matrix.full_masks())
    inside = cells_of(matrix, masks)
    everywhere = set(compare(matrix, base, head).indices)
    assert set(compare(matrix, base, head, masks).indices) == everywhere & inside


@settings(max_examples=80, deadline=None)
@given(matrix_and_tables(), st.data())
def test_a_part_is_the_block_s_changed_cells_with_an_exact_cover_of_its_own(case, data):
    matrix, base, head = case
    start = data.draw(st.integers(0, matrix.size))
    end = data.draw(st.integers(start, matrix.size))
    everywhere = set(compare(matrix, base, head).indices)
    found = part(matrix, changed_only(matrix, base, head), start, end)
    assert set(found.indices) == {i for i in everywhere if start <= i < end}
    covered = [i for rule in found.rules for i in cells_of(matrix, rule.masks)]
    assert sorted(covered) == sorted(found.indices)  # exact and disjoint
    for rule in found.rules:
        for i in cells_of(matrix, rule.masks):
            assert (base.outcome_at(i).key, head.outcome_at(i).key) == (
                rule.base.key,
                rule.head.key,
            )


def test_a_declared_value_equal_to_the_input_is_no_change():
    matrix = small_matrix([1])  # cells: page_size 1, 16, 128
    kept = table([0, 0, 0], [Outcome(KEPT)])
    declared_128 = table([0, 0, 0], [Outcome(VALUE, 128)])
    comparison = compare(matrix, kept, declared_128)
    assert list(comparison.indices) == [0, 1]  # the 128 cell resolves to 128 both ways


def test_equal_values_of_other_types_differ():
    matrix = small_matrix([1])
    ints = table([0, 0, 0], [Outcome(VALUE, 1)])
    floats = table([0, 0, 0], [Outcome(VALUE, 1.0)])
    assert compare(matrix, ints, floats).changed == 3


def test_a_kept_input_and_a_declared_value_of_another_type_differ():
    """1, 1.0 and true are three matrix values: where one side keeps the input page_size
    16 and the other declares 16.0 (or true), the cell changed; declaring 16 changes only
    the cells whose input is not 16."""
    matrix = small_matrix([2])
    where = matrix.axis_index("page_size")
    axis = matrix.axes[where]
    inputs = [axis.values[matrix.cell(i)[where]] for i in range(matrix.size)]
    kept = table([0] * matrix.size, [Outcome(KEPT)])
    for declared, changed in ((16.0, set(range(matrix.size))), (True, set(range(matrix.size))),
                              (16, {i for i, v in enumerate(inputs) if v != 16})):  # fmt: skip
        head = table([0] * matrix.size, [Outcome(VALUE, declared)])
        assert set(compare(matrix, kept, head).indices) == changed, declared
        assert set(compare(matrix, head, kept).indices) == changed, declared

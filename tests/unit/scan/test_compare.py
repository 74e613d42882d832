"""Comparison: the changed cells are exactly those whose page_size differs, and the rules
cover them exactly once, each with its cells' own transition."""

from __future__ import annotations

import itertools

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.engine.outcome import ERROR, KEPT, VALUE, Outcome
from harness.matrix.cells import iter_cells
from harness.matrix.load import parse_matrix
from harness.scan.compare import any_change, changed_only, compare, part, resolved_keys
from tests.unit.tables import (
    PAGE_SIZES,
    digits_of,
    matrix_and_tables,
    resolved,
    small_matrix,
    table,
)


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
    assert [r.cells for r in comparison.rules] == sorted(
        (r.cells for r in comparison.rules), reverse=True
    )  # the largest first
    for one, other in itertools.combinations(comparison.rules, 2):  # merged until none joins
        same = (one.base.key, one.head.key) == (other.base.key, other.head.key)
        apart = [a for a, (m, n) in enumerate(zip(one.masks, other.masks, strict=True)) if m != n]
        assert not (same and len(apart) == 1), (one, other)


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
    whole = changed_only(matrix, base, head)
    found = part(matrix, whole, start, end)
    assert set(found.indices) == {i for i in everywhere if start <= i < end}
    assert found.outcomes is whole.outcomes
    for i, b, h in zip(*found.arrays(), strict=True):  # each cell's own two codes
        assert (found.outcomes[b].key, found.outcomes[h].key) == (
            base.outcome_at(i).key,
            head.outcome_at(i).key,
        )
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


def _wide_matrix(radices: list[int]):
    """Axes a0.., then two outputs as axes (page_size, mode) and one as a field (limit: 5)."""
    axes = {f"a{n}": list(range(r)) for n, r in enumerate(radices)}
    axes |= {"page_size": [1, 16, 128], "mode": ["x", "y"]}
    doc = {
        "name": "wide",
        "target": {"path": "m.py", "function": "target", "output": ["page_size", "mode", "limit"]},
        "world": "plain",
        "axes": axes,
        "fields": {"limit": 5},
    }
    return parse_matrix(yaml.safe_dump(doc, sort_keys=False), "wide.yaml")


WIDE = [  # a declaration names some of the outputs; the others keep the cell's input
    Outcome(KEPT),
    Outcome(ERROR, "boom"),
    Outcome(VALUE, (("page_size", 128),)),
    Outcome(VALUE, (("page_size", 16), ("mode", "y"))),
    Outcome(VALUE, (("limit", 5),)),  # the field's own value: as good as keeping it
    Outcome(VALUE, (("limit", 5.0),)),  # equal, but another type
    Outcome(VALUE, (("page_size", 1), ("mode", "x"), ("limit", 5))),  # every output
    Outcome(VALUE, (("page_size", 1), ("mode", "x"), ("limit", 6))),
]


def _wide_result(matrix, outcome: Outcome, index: int):
    """Every output's final value (typed), from first principles: declared, else the input."""
    if outcome.kind not in (VALUE, KEPT):
        return (outcome.kind, outcome.value)
    digits = digits_of(matrix, index)
    inputs = {"page_size": [1, 16, 128][digits[-2]], "mode": "xy"[digits[-1]], "limit": 5}
    declared = dict(outcome.value) if outcome.kind == VALUE else {}
    values = {**inputs, **declared}
    return tuple((type(values[f]), values[f]) for f in ("page_size", "mode", "limit"))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=2), st.data())
def test_with_several_outputs_a_cell_changes_when_some_output_ends_otherwise(radices, data):
    matrix = _wide_matrix(radices)
    codes = st.lists(st.integers(0, len(WIDE) - 1), min_size=matrix.size, max_size=matrix.size)
    base, head = table(data.draw(codes), WIDE), table(data.draw(codes), WIDE)
    expected = {
        i
        for i in range(matrix.size)
        if _wide_result(matrix, base.outcome_at(i), i)
        != _wide_result(matrix, head.outcome_at(i), i)
    }
    assert set(compare(matrix, base, head).indices) == expected
    assert set(compare(matrix, head, base).indices) == expected
    assert any_change(matrix, base, head) == bool(expected)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_a_large_table_s_sparse_changes_are_found_in_every_block_and_cube(data):
    """Tables past the comparison's blocks (4,096 cells, sub-blocks of 64): a change at a
    block's first or last cell, or alone in a long equal stretch, is found; a `where` cube
    small or large finds exactly its own."""
    matrix = small_matrix([7, 11, 13, 5])  # 15,015 cells
    size = matrix.size
    spots = data.draw(st.sets(st.sampled_from([0, 63, 64, 4095, 4096, 8191, size - 1])
                              | st.integers(0, size - 1), min_size=1, max_size=12))  # fmt: skip
    base_codes = [0] * size
    head_codes = list(base_codes)
    for i in spots:
        head_codes[i] = 1  # 128 -> 16 everywhere it is drawn
    base, head = table(base_codes), table(head_codes)
    masks = tuple(data.draw(st.integers(1, full)) for full in matrix.full_masks())
    held = digits_of(matrix, data.draw(st.sampled_from(sorted(spots))))
    small = (*(1 << d for d in held[:-1]), matrix.full_masks()[-1])  # a 3-cell cube
    around = [tuple(m | (1 << d) for m, d in zip(c, held, strict=True)) for c in (masks, small)]
    assert set(compare(matrix, base, head).indices) == spots
    for cube in (masks, *around):  # a large or small part of the table, a spot inside or not
        inside = cells_of(matrix, cube)
        assert set(compare(matrix, base, head, cube).indices) == spots & inside
        assert any_change(matrix, base, head, cube) == bool(spots & inside)


def test_a_kept_list_field_and_a_declared_list_of_other_element_types_differ():
    """A field's input may be a list (`fields:`); declaring `[true]` where it is `[1]` is a
    change, declaring `[1]` is none."""
    doc = {"name": "lists", "target": {"path": "m.py", "function": "target", "output": "sizes"},
           "world": "plain", "axes": {"a": [0, 1]}, "fields": {"sizes": [1]}}  # fmt: skip
    matrix = parse_matrix(yaml.safe_dump(doc), "lists.yaml")
    kept = table([0, 0], [Outcome(KEPT)])
    for declared, changed in (([True], 2), ([1.0], 2), ([1], 0), ((1,), 2)):
        head = table([0, 0], [Outcome(VALUE, declared)])
        assert compare(matrix, kept, head).changed == changed, declared
        assert compare(matrix, head, kept).changed == changed, declared


def test_each_side_s_resolved_outcome_of_each_changed_cell():
    """`kept` resolved to the cell's input on the side asked for: base keeps page_size,
    head declares 16 (the cells whose input is 16 do not change)."""
    matrix = small_matrix([2])  # a0 in 0, 1; page_size 1, 16, 128
    comparison = compare(matrix, table([2] * 6), table([1] * 6))
    changed = list(comparison.indices)
    inputs = [PAGE_SIZES[i % 3] for i in changed]
    assert inputs == [1, 128, 1, 128]
    # kept resolves as if each cell had declared its own input; head declares 16
    spelled = [Outcome(VALUE, v) for v in PAGE_SIZES]  # 1, 16, 128
    explicit = compare(matrix, table([i % 3 for i in range(6)], spelled), table([1] * 6, spelled))
    assert list(explicit.indices) == changed
    assert resolved_keys(matrix, comparison, "base") == resolved_keys(matrix, explicit, "base")
    assert resolved_keys(matrix, comparison, "head") == resolved_keys(matrix, explicit, "head")
    assert len(set(resolved_keys(matrix, comparison, "base"))) == 2  # 1 and 128
    assert len(set(resolved_keys(matrix, comparison, "head"))) == 1

"""Baselines: any table written and read back is the same table; bad files are refused."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from harness.errors import HarnessError
from harness.gitio import CommitRevision
from harness.matrix.cells import iter_cells
from harness.report import baseline
from tests.unit.tables import matrix_and_tables, small_matrix, table

REVISION = CommitRevision("HEAD", "0" * 40, "subject")


@settings(max_examples=100, deadline=None)
@given(matrix_and_tables(count=1))
def test_a_table_round_trips_through_its_baseline_text(tmp_path_factory, case):
    matrix, original = case
    path = tmp_path_factory.mktemp("baseline") / "b.json"
    path.write_text(baseline.render(matrix, REVISION, original))
    back = baseline.read(str(path), matrix)
    assert [back.outcome_at(i).key for i in range(matrix.size)] == [
        original.outcome_at(i).key for i in range(matrix.size)
    ]


@settings(max_examples=100, deadline=None)
@given(matrix_and_tables(count=1))
def test_the_table_cover_holds_every_cell_once_with_its_own_outcome(case):
    matrix, original = case
    seen: list[int] = []
    for masks, code in baseline.table_cover(matrix, original):
        for cell in iter_cells(masks):
            index = matrix.index(cell)
            assert original.codes[index] == code
            seen.append(index)
    assert sorted(seen) == list(range(matrix.size))


def test_the_text_is_stable_and_one_cube_per_line():
    matrix = small_matrix([2])
    text = baseline.render(matrix, REVISION, table([0] * 3 + [2] * 3))
    assert text == baseline.render(matrix, REVISION, table([0] * 3 + [2] * 3))
    doc = json.loads(text)
    assert doc["outcomes"] == [
        {"outcome": {"keeps": "page_size"}, "cells": 3, "where": [{"a0": [1]}]},
        {"outcome": {"page_size": 128}, "cells": 3, "where": [{"a0": [0]}]},
    ]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["outcomes"].pop(), "do not cover"),
        (lambda d: d["outcomes"][0]["where"].append({"a0": [0]}), "do not cover"),
        (lambda d: d["axes"].update(a0=[0, 1, 2]), "other axes"),
        (lambda d: d["outcomes"][0].update(outcome={"page_size": 1, "x": 2}), "unknown outcome"),
        (lambda d: d.update(harness_baseline=99), "not a harness baseline"),
    ],
)
def test_a_damaged_baseline_is_one_clear_error(tmp_path, edit, message):
    matrix = small_matrix([2])
    doc = json.loads(baseline.render(matrix, REVISION, table([0] * 3 + [2] * 3)))
    edit(doc)
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(HarnessError, match=message):
        baseline.read(str(path), matrix)

"""Rules per output field, for a matrix that compares several.

A cell changed when any of its fields did; for a reader, "which cells get a
different page_size, and how" is the question, field by field. Each changed
cell is projected on one field (its value, with a kept field resolved to the
cell's input; or the error or state the whole outcome is), and the cells whose
projection differs are grouped by `before -> after` and covered by rules, as
the whole-outcome rules are. Cells that are an error (or unevaluable) on
either side change no field: they are grouped apart, under `OUTCOME`, the
side that is a value shown as `a value`.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.outcome import Outcome
from harness.engine.outputs import Inputs, declared
from harness.matrix.cells import bits_of
from harness.matrix.model import Matrix, format_value
from harness.report.model import (
    DiffReport,
    RuleView,
    axes_of,
    conditions_of,
    outcome_label,
    where_of,
)
from harness.scan.compare import Comparison, cover

OUTCOME = "(outcome)"  # the group of cells that are no value on either side
OUTCOME_TITLE = "no field (an error or a state on a side)"  # how reports name that group
RULES_SHOWN = 12  # rules per field in text and markdown; the JSON report has them all


@dataclass(frozen=True)
class FieldChanges:
    field: str
    cells: int
    rules: list[RuleView]


def of_report(report: DiffReport) -> list[FieldChanges]:
    """`by_field` for a report, worked out once however many formats are written."""
    if report.field_changes is None:
        report.field_changes = by_field(report.matrix, report.comparison)
    return report.field_changes


def by_field(matrix: Matrix, comparison: Comparison) -> list[FieldChanges]:
    """For each output field that changes somewhere (then OUTCOME, if any cell is no value
    on both sides), its changed cells and their rules, largest first."""
    fields, inputs = matrix.target.outputs, Inputs(matrix)
    by_pair: dict[tuple[int, int], list[int]] = {}
    pairs = zip(comparison.indices, comparison.base_codes, comparison.head_codes, strict=True)
    for index, b, h in pairs:
        by_pair.setdefault((b, h), []).append(index)
    groups: dict[str, dict[tuple[str, str], list[tuple[int, ...]]]] = {}
    for (b, h), indices in by_pair.items():
        base, head = comparison.outcomes[b], comparison.outcomes[h]
        before, after = declared(base, fields), declared(head, fields)
        if before is None or after is None:  # an error or a state on a side: no field compares
            key = (_label(base, before, fields), _label(head, after, fields))
            groups.setdefault(OUTCOME, {}).setdefault(key, []).extend(map(matrix.cell, indices))
            continue
        for field in fields:
            old, new = _shown(base, before, field), _shown(head, after, field)
            if old is not None and new is not None:  # the same for every cell of the pair
                if old != new:
                    cells = groups.setdefault(field, {}).setdefault((old, new), [])
                    cells.extend(map(matrix.cell, indices))
                continue
            for index in indices:  # a kept field: each cell's own input
                given = format_value(inputs.one(field, index))
                key = (given if old is None else old, given if new is None else new)
                if key[0] != key[1]:
                    groups.setdefault(field, {}).setdefault(key, []).append(matrix.cell(index))
    order = [*fields, OUTCOME]
    return [_changes(matrix, name, groups[name]) for name in order if name in groups]


def _label(outcome: Outcome, values: dict | None, fields: tuple[str, ...]) -> str:
    return "a value" if values is not None else outcome_label(outcome, fields)


def _shown(outcome: Outcome, values: dict | None, field: str) -> str | None:
    """The field as the outcome shows it; None when it keeps the cell's input."""
    if values is None:
        return outcome_label(outcome, (field,))
    return format_value(values[field]) if field in values else None


def _changes(matrix: Matrix, field: str, groups: dict) -> FieldChanges:
    rules, axes, total = [], axes_of(matrix), 0
    for (before, after), cells in groups.items():
        total += len(cells)
        for masks in cover(cells, len(matrix.axes)):
            where = where_of(matrix, masks)
            size = 1
            for mask in masks:
                size *= len(bits_of(mask))
            rules.append(RuleView(where, conditions_of(where, axes), size, f"{before} -> {after}"))
    rules.sort(key=lambda r: -r.cells)
    return FieldChanges(field, total, rules)

"""What an outcome says about each output field, `kept` fields resolved to the cell's input.

A matrix names one output field (page_size) or several. With one, a declared
value is the outcome's value; with several, it is a tuple of (field, value)
pairs for the fields declared, in the matrix's order. Either way a field the
function left alone keeps the cell's input value of that field.
"""

from __future__ import annotations

from typing import Any

from harness.engine.outcome import KEPT, VALUE, Outcome, freeze
from harness.matrix.model import Matrix


def declared(outcome: Outcome, fields: tuple[str, ...]) -> dict[str, Any] | None:
    """{field: value} the outcome declares ({} when it keeps all); None: it is no value."""
    if outcome.kind == KEPT:
        return {}
    if outcome.kind != VALUE:
        return None
    return {fields[0]: outcome.value} if len(fields) == 1 else dict(outcome.value)


class Inputs:
    """The input value of each output field at a cell index: an axis value, or a constant."""

    def __init__(self, matrix: Matrix) -> None:
        self.fields = matrix.target.outputs
        self.where: dict[str, tuple] = {}
        for field in self.fields:
            axis = matrix.axis_index(field)
            if axis is None:
                self.where[field] = (None, matrix.fields.get(field))
            else:
                stride, radix = matrix.strides[axis], matrix.radices[axis]
                self.where[field] = (axis, (stride, radix, matrix.axes[axis].values))

    def one(self, field: str, index: int) -> Any:
        axis, how = self.where[field]
        if axis is None:
            return how
        stride, radix, values = how
        return values[index // stride % radix]

    def resolved(self, outcome: Outcome, index: int) -> Any:
        """The outcome's identity at this cell with kept fields resolved (type-aware)."""
        fields = declared(outcome, self.fields)
        if fields is None:
            return outcome.key
        values = (fields[f] if f in fields else self.one(f, index) for f in self.fields)
        return tuple(freeze(v) for v in values)

    def given(self, index: int) -> dict[str, Any]:
        return {f: self.one(f, index) for f in self.fields}

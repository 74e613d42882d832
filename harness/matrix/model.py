"""The matrix as data: a target, its axes and values, constant fields and bindings.

A cell is never materialized as a dict for the whole matrix: it is a tuple
of value indices (one per axis), and its position in the matrix is the
mixed-radix number those digits spell, first axis most significant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from harness.errors import HarnessError

SCALAR_TYPES = (type(None), bool, int, float, str)
MAX_VALUES = 62  # values of one axis, at most (checked while the YAML is parsed, and after)


NO_DEFAULT = object()
ALL_PASSES = ("all",)  # `passes: all`: every registered pass, in file order
RUN_ORDER = ("run-order",)  # `passes: run-order`: every registered pass, in the order run


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[Any, ...]
    default: Any = NO_DEFAULT

    def index_of(self, text: str) -> int:
        """Index of the value written `text` as in the matrix file (`null`, `16`, `fa4`)."""
        for i, value in enumerate(self.values):
            if format_value(value) == text:
                return i
        shown = ", ".join(format_value(v) for v in self.values)
        raise HarnessError(f"unknown value {text!r} for axis {self.name} (values: {shown})")


@dataclass(frozen=True)
class Target:
    """One function, or a pipeline of passes run in order over one view, or the entry
    point that resolves a whole configuration (`entry`: what it assigns or declares on
    the configuration it is handed is its outcome)."""

    path: str
    passes: tuple[str, ...]  # one name: one function; ALL_PASSES, RUN_ORDER: every registered one
    outputs: tuple[str, ...]  # each output field, in order
    roots: tuple[str, ...] = ()  # source roots for module names (default: from `path`)
    guards: tuple[tuple[str, Any], ...] = ()  # (pass, binding): run it only where truthy
    entry: bool = False  # `entry: NAME`: the function resolves the configuration it is handed
    # `otherwise:` (path, entry name) run, in order, at a revision without the file `path`
    # (SGLang's __post_init__ before its pipeline.py)
    otherwise: tuple[tuple[str, str], ...] = ()

    @property
    def alternatives(self) -> tuple[Target, ...]:
        """The entry, then each of `otherwise` as a target of its own: a revision runs the
        first whose file it has."""
        more = (
            replace(self, path=path, passes=(name,), otherwise=()) for path, name in self.otherwise
        )
        return (replace(self, otherwise=()), *more)

    @property
    def pipeline(self) -> bool:
        return len(self.passes) > 1 or self.passes in (ALL_PASSES, RUN_ORDER)


@dataclass(frozen=True)
class Matrix:
    name: str
    source: str
    target: Target
    world: str
    axes: tuple[Axis, ...]
    fields: dict[str, Any] = field(default_factory=dict)
    bindings: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    digest: str = ""
    shipped: bool = False  # one of harness's own matrix files

    @cached_property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(axis.name for axis in self.axes)

    @cached_property
    def radices(self) -> tuple[int, ...]:
        return tuple(len(axis.values) for axis in self.axes)

    @cached_property
    def strides(self) -> tuple[int, ...]:
        strides, step = [], 1
        for radix in reversed(self.radices):
            strides.append(step)
            step *= radix
        return tuple(reversed(strides))

    @cached_property
    def size(self) -> int:
        total = 1
        for radix in self.radices:
            total *= radix
        return total

    def axis_index(self, name: str) -> int | None:
        return self._axis_positions.get(name)

    @cached_property
    def _axis_positions(self) -> dict[str, int]:
        positions: dict[str, int] = {}
        for i, axis in enumerate(self.axes):
            positions.setdefault(axis.name, i)  # the first, as a scan in order finds it
        return positions

    def cell(self, index: int) -> tuple[int, ...]:
        """The value indices of the cell at `index`."""
        digits = []
        for radix in reversed(self.radices):
            index, digit = divmod(index, radix)
            digits.append(digit)
        return tuple(reversed(digits))

    def index(self, cell: tuple[int, ...]) -> int:
        return sum(d * s for d, s in zip(cell, self.strides, strict=True))

    def values_of(self, cell: tuple[int, ...]) -> dict[str, Any]:
        """A display dict {axis: value} for one cell."""
        return {axis.name: axis.values[d] for axis, d in zip(self.axes, cell, strict=True)}

    @cached_property
    def edit_hint(self) -> str:
        """Where a user adds a field or binding: their own file, or a copy of a shipped one."""
        if self.shipped:
            return f"a copy of {self.source} (passed with --matrix PATH)"
        return self.source

    def full_masks(self) -> tuple[int, ...]:
        """The cube of every cell: all values of every axis."""
        return self._full_masks

    @cached_property
    def _full_masks(self) -> tuple[int, ...]:
        return tuple((1 << radix) - 1 for radix in self.radices)


def format_value(value: Any) -> str:
    """A value written as in a matrix file: null, true, 16, fa4."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def same_value(a: Any, b: Any) -> bool:
    """Equal as matrix values: 1, 1.0 and true are three different values, also inside
    a list, tuple or mapping (a field's value may be one). Python's `==` decides first, at
    C speed: the element types are walked only for containers it finds equal."""
    return type(a) is type(b) and a == b and _same_inside(a, b)


def _same_inside(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple):
        return all(map(same_value, a, b))
    if isinstance(a, dict):  # equal keys by `==` may still be of other types (1, true)
        return all(
            any(same_value(k, j) and same_value(v, w) for j, w in b.items()) for k, v in a.items()
        )
    return True

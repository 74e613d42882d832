"""Cells and cubes: iterating, laying out and selecting cells without building dicts.

A cube is one bitmask per axis (the values it allows); the `--where` filters
are a cube, and so is every rule of a comparison.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from functools import cache

from harness.errors import HarnessError
from harness.matrix.model import Matrix

Cube = tuple[int, ...]


def first_cell(masks: Cube) -> tuple[int, ...]:
    """The cube's first cell: the lowest allowed value of each axis."""
    return tuple((mask & -mask).bit_length() - 1 for mask in masks)


def cube_size(masks: Cube) -> int:
    """How many cells the cube holds."""
    total = 1
    for mask in masks:
        total *= mask.bit_count()
    return total


def iter_cells(masks: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every cell inside the cube `masks` (a bitmask of allowed values per axis), in order."""
    return itertools.product(*(bits_of(mask) for mask in masks))


def cube_runs(matrix: Matrix, masks: tuple[int, ...]) -> tuple[list[int], int]:
    """The cube's cells as contiguous runs: their start indices (ascending) and common length.

    Trailing axes the cube leaves whole make each run long; the axes before
    them multiply the number of runs.
    """
    k, full = len(masks), matrix.full_masks()
    while k and masks[k - 1] == full[k - 1]:
        k -= 1
    length = matrix.strides[k - 1] if k else matrix.size
    offset, starts = 0, None
    for mask, stride in zip(masks[:k], matrix.strides, strict=False):
        if not mask & (mask - 1):  # one value: a fixed offset, no fan-out
            offset += (mask.bit_length() - 1) * stride
        elif starts is None:
            starts = [d * stride for d in bits_of(mask)]
        else:
            starts = [s + d * stride for s in starts for d in bits_of(mask)]
    return ([offset] if starts is None else [s + offset for s in starts]), length


@cache
def bits_of(mask: int) -> tuple[int, ...]:
    """The indices of the set bits of `mask`, ascending (masks are few: remembered)."""
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return tuple(out)


def parse_where(matrix: Matrix, exprs: list[str]) -> tuple[int, ...]:
    """`AXIS=V[,V...]` filters (one axis each) as a cube of value masks."""
    masks = list(matrix.full_masks())
    seen: set[str] = set()
    for expr in exprs:
        name, sep, values = expr.partition("=")
        name = name.strip()
        if not sep or not name or not values:
            raise HarnessError(
                f"--where {expr!r}: expected AXIS=VALUE[,VALUE...], e.g. platform=sm100"
            )
        i = matrix.axis_index(name)
        if i is None:
            known = ", ".join(a.name for a in matrix.axes)
            raise HarnessError(
                f"--where {expr!r}: matrix {matrix.name} has no axis {name!r} (axes: {known})"
            )
        if name in seen:
            raise HarnessError(
                f"--where {expr!r}: axis {name} given twice; list values as {name}=A,B"
            )
        seen.add(name)
        masks[i] = 0
        for text in values.split(","):
            masks[i] |= 1 << matrix.axes[i].index_of(text.strip())
    return tuple(masks)

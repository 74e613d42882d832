"""A grid of what changed over two axes: per square (one value of each), its cells, how
many changed, to what, and which values of the other axes its changed cells take.

Built from the rules of a report, not from its cells: the rules are disjoint cubes that
cover the changed cells exactly (`harness.scan.compare`), so a square's changed cells are
the sum, over the rules that reach it, of the rule's cells divided by the squares it
spans. The cost is the squares the rules reach (at most the changed cells, and the
rules are usually few), whatever the matrix's size, and nothing is evaluated again.
The same works from a JSON report's `summary` (`grid_of_document`), which is how the
markdown report, rendered from the JSON document, draws it.

The default pair (`best_axes`) is the one that best separates changed from unchanged
cells: the least conditional entropy of "changed" given the square (the largest
information gain), ties to the pair whose axes come first in the matrix.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import operator
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from harness.errors import HarnessError
from harness.matrix.cells import bits_of
from harness.matrix.load import MAX_CELLS
from harness.matrix.model import MAX_VALUES, same_value
from harness.report.document import DiffDocument, Rule
from harness.report.escape import flat
from harness.report.model import DiffReport, transition_text


@dataclass(frozen=True)
class Square:
    """One square of a grid: the cells with this row value and this column value."""

    row: Any  # the row axis value (raw, as in the matrix)
    col: Any  # the column axis value
    cells: int  # cells of the matrix in this square
    changed: int  # changed cells in this square
    transitions: tuple[tuple[str, int], ...]  # (rule transition text, cells), most first
    others: tuple[tuple[str, tuple[Any, ...]], ...]  # per other axis: its changed cells' values


@dataclass(frozen=True)
class Grid:
    """Two axes of a report's matrix and a square for each pair of their values."""

    rows: str
    cols: str
    row_values: tuple[Any, ...]  # matrix order
    col_values: tuple[Any, ...]
    squares: dict[tuple[int, int], Square]  # (row index, col index)
    total: int
    changed: int
    axes: tuple[tuple[str, tuple[Any, ...]], ...] = ()  # every axis and its values, in order


@dataclass(frozen=True)
class Cube:
    """A rule as the grid reads it: its value indices per axis, cells and transition."""

    masks: tuple[int, ...]  # per axis, a bit per value
    cells: int
    transition: str

    @property
    def values(self) -> tuple[tuple[int, ...], ...]:
        """The value indices per axis."""
        return tuple(map(bits_of, self.masks))


WORK = 20_000_000  # steps a grid drawn from a document may take (the document is untrusted)


class Budget:
    """The steps left for drawing a grid from a document: a lying document (overlapping
    rules, thousands of axes) is a ValueError, not an hour's work."""

    def __init__(self, steps: int = WORK) -> None:
        self.left = steps

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise ValueError("the report is too large to draw a grid from")


def _spend(space: Space, steps: int) -> None:
    if space.budget is not None:
        space.budget.spend(steps)


@dataclass(frozen=True)
class Space:
    """What a grid is drawn from: the axes (name, values), the cells, the rules; a budget
    when they come from a document."""

    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    total: int
    cubes: tuple[Cube, ...]
    budget: Budget | None = field(default=None, compare=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)

    @property
    def changed(self) -> int:
        return sum(cube.cells for cube in self.cubes)


def space_of(report: DiffReport) -> Space:
    """The report's matrix and rule cover (from the comparison: a report read back from
    the cache has it too)."""
    matrix, outputs = report.matrix, report.matrix.target.outputs
    texts: dict[tuple[int, int], str] = {}  # rules are many, their outcome objects few
    cubes = []
    for rule in report.comparison.rules:  # (the rules hold the outcomes: ids stay theirs)
        key = (id(rule.base), id(rule.head))
        if key not in texts:
            texts[key] = transition_text(rule.base, rule.head, outputs)
        cubes.append(Cube(rule.masks, rule.cells, texts[key]))
    axes = tuple((axis.name, tuple(axis.values)) for axis in matrix.axes)
    return Space(axes, matrix.size, tuple(cubes))


def best_axes(report: DiffReport) -> tuple[str, str]:
    """The pair of axes that best separates changed from unchanged cells (see the module
    docstring), as (rows, columns): rows the axis with more values, else the earlier one.
    A matrix of fewer than two axes has no grid (HarnessError)."""
    return best_pair(space_of(report))


def build_grid(report: DiffReport, axes: tuple[str, str] | None = None) -> Grid:
    """The grid of `report` over `axes` (rows, columns); None: `best_axes`. An axis the
    matrix does not have, or one axis twice, is a HarnessError naming the valid ones."""
    return grid_of(space_of(report), axes)


def grid_of(space: Space, axes: tuple[str, str] | None = None) -> Grid:
    rows, cols = best_pair(space) if axes is None else checked_axes(space.names, axes)
    r, c = space.names.index(rows), space.names.index(cols)
    row_values, col_values = space.axes[r][1], space.axes[c][1]
    size = space.total // (len(row_values) * len(col_values)) if space.total else 0
    _spend(space, len(space.cubes) + len(row_values) * len(col_values) * (len(space.axes) + 1))
    found: dict[tuple[int, int], list[Cube]] = {}
    for cube in space.cubes:
        _spend(space, cube.masks[r].bit_count() * cube.masks[c].bit_count() * len(space.axes))
        for key in _reached(cube, r, c):
            found.setdefault(key, []).append(cube)
    squares = {
        (i, j): _square(space, (r, c), (i, j), size, found.get((i, j), []))
        for i in range(len(row_values))
        for j in range(len(col_values))
    }
    return Grid(rows, cols, row_values, col_values, squares, space.total, space.changed,
                space.axes)  # fmt: skip


def _reached(cube: Cube, r: int, c: int) -> Iterable[tuple[int, int]]:
    return itertools.product(bits_of(cube.masks[r]), bits_of(cube.masks[c]))


def _share(cube: Cube, r: int, c: int) -> int:
    """The cube's cells in each square it reaches (a cube is a product: equal shares)."""
    return cube.cells // (cube.masks[r].bit_count() * cube.masks[c].bit_count())


def _square(
    space: Space, rc: tuple[int, int], at: tuple[int, int], size: int, cubes: list[Cube]
) -> Square:
    (r, c), (i, j) = rc, at
    tally: Counter[str] = Counter()
    for cube in cubes:
        tally[cube.transition] += _share(cube, r, c)
    others = tuple(
        (name, tuple(values[k] for k in bits_of(_union(cubes, n))))
        for n, (name, values) in enumerate(space.axes)
        if n not in rc
    )
    ranked = tuple(sorted(tally.items(), key=lambda item: (-item[1], item[0])))
    row, col = space.axes[r][1][i], space.axes[c][1][j]
    return Square(row, col, size, sum(tally.values()), ranked, others)


def _union(cubes: list[Cube], axis: int) -> int:
    """The values of `axis` the cubes take, as a mask."""
    return reduce(operator.or_, (cube.masks[axis] for cube in cubes), 0)


def checked_axes(names: Sequence[str], axes: tuple[str, str]) -> tuple[str, str]:
    """`axes` if both are axes of the matrix and differ; else one actionable error."""
    valid = _names(names)
    for name in axes:
        if name not in names:
            raise HarnessError(
                f"--grid {','.join(axes)}: the matrix has no axis {name!r}; choose two of: {valid}"
            )
    if axes[0] == axes[1]:
        raise HarnessError(f"--grid {','.join(axes)}: name two different axes, of: {valid}")
    return axes


NAMES_SHOWN = 40  # axis names an error lists, at most


def _names(names: Sequence[str]) -> str:
    """The axis names as an error message lists them: each on one line, without controls
    (a document's names are hostile: a line starting `::` is a workflow command in CI),
    cut, and at most NAMES_SHOWN of them."""
    shown = [flat(name)[:80] for name in names[:NAMES_SHOWN]]
    more = f" and {len(names) - NAMES_SHOWN:,} more" if len(names) > NAMES_SHOWN else ""
    return ", ".join(shown) + more


def best_pair(space: Space) -> tuple[str, str]:
    """The pair of the least `pair_entropy`, first in matrix order among equals, with
    the axis of more values as rows."""
    if len(space.axes) < 2:
        raise HarnessError(
            f"a grid needs two axes and the matrix has {len(space.axes)}: "
            "nothing to draw (--grid applies to matrices of two axes or more)"
        )
    best, least = (0, 1), math.inf
    for pair in itertools.combinations(range(len(space.axes)), 2):
        entropy = pair_entropy(space, *pair)
        if entropy < least - 1e-12:
            best, least = pair, entropy
    first, second = space.axes[best[0]], space.axes[best[1]]
    if len(second[1]) > len(first[1]):
        first, second = second, first
    return first[0], second[0]


def pair_entropy(space: Space, r: int, c: int) -> float:
    """H(changed | square of axes r, c), in bits: the sum over squares of the square's
    share of the cells times the binary entropy of its fraction of changed cells."""
    _spend(space, len(space.cubes) + 64)
    if not space.total:
        return 0.0
    projected: Counter[tuple[int, int]] = Counter()
    for cube in space.cubes:  # many cubes project to the same rectangle: summed first
        projected[(cube.masks[r], cube.masks[c])] += cube.cells
    counts: Counter[tuple[int, int]] = Counter()
    for (rows, cols), cells in projected.items():
        _spend(space, rows.bit_count() * cols.bit_count())
        share = cells // (rows.bit_count() * cols.bit_count())
        for key in itertools.product(bits_of(rows), bits_of(cols)):
            counts[key] += share
    size = space.total / (len(space.axes[r][1]) * len(space.axes[c][1]))
    return sum(size / space.total * binary_entropy(n / size) for n in counts.values())


def binary_entropy(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


def grid_of_document(doc: DiffDocument, axes: tuple[str, str] | None = None) -> Grid:
    """The grid of a diff report read back (`document.read_document`), from its `axes`,
    `cells` and `summary` (the rules).
    The document may come from an untrusted job: a rule that names no axis value of the
    report, or whose cells are not its cube's size, or a summary that does not add up to
    the changed cells, is a ValueError."""
    return grid_of(space_of_document(doc), axes)


def space_of_document(doc: DiffDocument) -> Space:
    """The space of a report read back, checked as far as a harness report always holds:
    axes of at most MAX_VALUES values, at most MAX_CELLS cells, rules that fit the axes and
    add up to the changed cells, no more than the cells (else a ValueError; the types are
    `read_document`'s to check)."""
    axes = tuple((name, tuple(values)) for name, values in doc.axes.items())
    if any(len(values) > MAX_VALUES for _, values in axes):
        raise ValueError(f"an axis has more than {MAX_VALUES} values")
    total = doc.cells
    if total != math.prod(len(values) for _, values in axes):
        raise ValueError("cells is not the product of the axes' sizes")
    if total > MAX_CELLS:
        raise ValueError(f"more than {MAX_CELLS:,} cells")
    budget = Budget()
    budget.spend(len(doc.summary) * (len(axes) + 1))
    lookups = [_lookup(values) for _, values in axes]
    cubes = tuple(_cube_of(rule, axes, lookups) for rule in doc.summary)
    changed = doc.changed_count
    if sum(cube.cells for cube in cubes) != changed or changed > total:
        raise ValueError("the rules do not add up to the changed cells")
    return Space(axes, total, cubes, budget)


def _cube_of(
    rule: Rule,
    axes: tuple[tuple[str, tuple[Any, ...]], ...],
    lookups: list[dict[tuple[type, Any], int]],
) -> Cube:
    where, names = rule.where, {name for name, _ in axes}
    if not set(where) <= names:
        raise ValueError("a rule names an axis the report does not have")
    values = tuple(
        _indices(where[name], known, lookup) if name in where else tuple(range(len(known)))
        for (name, known), lookup in zip(axes, lookups, strict=True)
    )
    if rule.cells != math.prod(map(len, values)):
        raise ValueError("a rule's cells are not the size of its cube")
    chosen_bits = tuple(sum(1 << k for k in chosen) for chosen in values)
    return Cube(chosen_bits, rule.cells, rule.transition)


def _lookup(known: tuple[Any, ...]) -> dict[tuple[type, Any], int]:
    """{(type, value): index} of an axis's hashable values (1, 1.0 and true apart)."""
    found = {}
    for k, value in enumerate(known):
        with contextlib.suppress(TypeError):
            found.setdefault((type(value), value), k)
    return found


def _indices(
    chosen: list[Any], known: tuple[Any, ...], lookup: dict[tuple[type, Any], int]
) -> tuple[int, ...]:
    """The indices of `chosen` among `known`; a value not there is a ValueError."""
    if not isinstance(chosen, list) or len(chosen) > len(known):
        raise ValueError("a rule's values are not a list of its axis's values")
    found = set()
    for value in chosen:
        try:
            found.add(lookup[(type(value), value)])
            continue
        except KeyError:  # not an axis value (nan is not equal to itself either)
            pass
        except TypeError:  # unhashable: look for it
            found.update(k for k, v in enumerate(known) if same_value(v, value))
            continue
        raise ValueError("a rule names a value its axis does not have")
    if not found or len(found) != len(chosen):
        raise ValueError("a rule names a value its axis does not have")
    return tuple(sorted(found))

"""Compare two outcome tables: the changed cells, and rules that cover them exactly.

A cell changed when its *resolved* outcome differs: a `kept` outcome resolves
to the cell's input value of the output field, so "declared 128" and "kept an
input of 128" are the same page_size. Changed cells are grouped by their
transition (base outcome -> head outcome, with `kept` left symbolic, so
"128 -> input page_size" is one transition), and each group is covered by a
few disjoint cubes (rules: axis = set of values).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass

from harness.engine.outcome import CODE_TYPE, KEPT, Outcome, OutcomeTable
from harness.engine.outputs import Inputs, declared
from harness.matrix.cells import bits_of, cube_runs
from harness.matrix.model import Matrix, same_value

BLOCK = 4096
SUB_BLOCK = 64


@dataclass(frozen=True)
class Rule:
    """A cube of cells (one value mask per axis) sharing one transition."""

    masks: tuple[int, ...]
    cells: int
    base: Outcome
    head: Outcome


@dataclass
class Comparison:
    """Changed cells (index and outcome pair), and their rule cover."""

    outcomes: list[Outcome]
    indices: array
    base_codes: array
    head_codes: array
    rules: list[Rule]

    @property
    def changed(self) -> int:
        return len(self.indices)

    def arrays(self) -> tuple[array, array, array]:
        """(indices, base codes, head codes) of the changed cells."""
        return self.indices, self.base_codes, self.head_codes


def compare(
    matrix: Matrix, base: OutcomeTable, head: OutcomeTable, where: tuple[int, ...] | None = None
) -> Comparison:
    """Every cell (inside the `where` cube, if given) whose resolved outcome differs."""
    found = changed_only(matrix, base, head, where)
    found.rules = summarize(matrix, found.outcomes, *found.arrays())
    return found


def changed_only(
    matrix: Matrix, base: OutcomeTable, head: OutcomeTable, where: tuple[int, ...] | None = None
) -> Comparison:
    """`compare` without the rule cover (see `part`)."""
    outcomes, changes = _changes(matrix, base, head, where)
    indices, bcodes, hcodes = array("L"), array(CODE_TYPE), array(CODE_TYPE)
    for i, b, h in changes:
        indices.append(i)
        bcodes.append(b)
        hcodes.append(h)
    return Comparison(outcomes, indices, bcodes, hcodes, [])


def part(matrix: Matrix, comparison: Comparison, start: int, end: int) -> Comparison:
    """The changed cells whose index is in [start, end) (a block of leading axes' values),
    with a rule cover of their own: a slice of one comparison, not a comparison again."""
    lo, hi = bisect_left(comparison.indices, start), bisect_left(comparison.indices, end)
    indices, bcodes, hcodes = (a[lo:hi] for a in comparison.arrays())
    rules = summarize(matrix, comparison.outcomes, indices, bcodes, hcodes) if hi > lo else []
    return Comparison(comparison.outcomes, indices, bcodes, hcodes, rules)


def any_change(
    matrix: Matrix, base: OutcomeTable, head: OutcomeTable, where: tuple[int, ...] | None = None
) -> bool:
    """Whether some cell differs: `compare` that stops at the first one and builds no rules."""
    _, changes = _changes(matrix, base, head, where)
    return next(changes, None) is not None


def _changes(matrix: Matrix, base: OutcomeTable, head: OutcomeTable, where):
    """The merged outcome list, and (cell, base code, head code) for each changed cell."""
    outcomes, head_codes = _merge_palettes(base, head)
    resolver = _Resolver(matrix, outcomes)
    starts, length = cube_runs(matrix, where or matrix.full_masks())
    changes = (
        (i, base.codes[i], head_codes[i])
        for i in _differing(base.codes, head_codes, starts, length)
        if resolver.differs(i, base.codes[i], head_codes[i])
    )
    return outcomes, changes


def _merge_palettes(base: OutcomeTable, head: OutcomeTable) -> tuple[list[Outcome], array]:
    """One outcome list for both tables, and head's codes rewritten into it."""
    outcomes = list(base.outcomes)
    position = {outcome.key: i for i, outcome in enumerate(outcomes)}
    mapping = []
    for outcome in head.outcomes:
        if outcome.key not in position:
            position[outcome.key] = len(outcomes)
            outcomes.append(outcome)
        mapping.append(position[outcome.key])
    if mapping == list(range(len(mapping))):
        return outcomes, head.codes
    return outcomes, array(CODE_TYPE, map(mapping.__getitem__, head.codes))


def _differing(a: array, b: array, starts: list[int], length: int) -> Iterator[int]:
    """Indices in the runs where the code arrays differ, skipping equal stretches at C speed.
    Runs covering a small part of the table (a pytest item's slice) are copied alone."""
    width, whole = a.itemsize, len(starts) * length * 4 >= len(a)
    abytes, bbytes, base = (a.tobytes(), b.tobytes(), 0) if whole else (b"", b"", 0)
    for run in starts:
        if not whole:
            abytes, bbytes, base = (
                a[run : run + length].tobytes(),
                b[run : run + length].tobytes(),
                run,
            )
        for first in range(run, run + length, BLOCK):
            last = min(first + BLOCK, run + length)
            lo, hi = (first - base) * width, (last - base) * width
            if abytes[lo:hi] == bbytes[lo:hi]:
                continue
            for start in range(first, last, SUB_BLOCK):
                end = min(start + SUB_BLOCK, last)
                lo, hi = (start - base) * width, (end - base) * width
                if abytes[lo:hi] != bbytes[lo:hi]:
                    yield from (i for i in range(start, end) if a[i] != b[i])


class _Resolver:
    """Decides whether two outcome codes differ once `kept` is resolved to the input."""

    def __init__(self, matrix: Matrix, outcomes: list[Outcome]) -> None:
        self.outcomes = outcomes
        self.inputs = Inputs(matrix)
        self.single = len(matrix.target.outputs) == 1
        self.by_pair: dict[tuple[int, int], bool] = {}  # pairs that need no cell's input

    def differs(self, index: int, b: int, h: int) -> bool:
        ob, oh = self.outcomes[b], self.outcomes[h]
        if not self.single:
            known = self.by_pair.get((b, h))
            if known is not None:
                return known
            answer = self.inputs.resolved(ob, index) != self.inputs.resolved(oh, index)
            if self._whole(ob) and self._whole(oh):  # no kept field: the same on every cell
                self.by_pair[(b, h)] = answer
            return answer
        if (ob.kind == KEPT) == (oh.kind == KEPT):
            return True  # distinct codes, neither or both kept: distinct outcomes
        value = oh.value if ob.kind == KEPT else ob.value
        return not same_value(self.inputs.one(self.inputs.fields[0], index), value)

    def _whole(self, outcome: Outcome) -> bool:
        """Whether the outcome names every output (or is no value): no input needed."""
        values = declared(outcome, self.inputs.fields)
        return values is None or all(f in values for f in self.inputs.fields)


def resolved_keys(matrix: Matrix, comparison: Comparison, side: str) -> list:
    """Per changed cell, the identity of its base or head outcome with `kept` resolved."""
    inputs = Inputs(matrix)
    codes = comparison.base_codes if side == "base" else comparison.head_codes
    pairs = zip(comparison.indices, codes, strict=True)
    return [inputs.resolved(comparison.outcomes[code], index) for index, code in pairs]


# --- the rule cover ----------------------------------------------------------------


def summarize(
    matrix: Matrix, outcomes: list[Outcome], indices: array, bcodes: array, hcodes: array
) -> list[Rule]:
    """Disjoint cubes covering exactly the changed cells, one transition each, largest first."""
    groups: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    for i, b, h in zip(indices, bcodes, hcodes, strict=True):
        groups.setdefault((b, h), []).append(matrix.cell(i))
    rules = []
    for (b, h), cells in groups.items():
        for masks in cover(cells, len(matrix.axes)):
            rules.append(Rule(masks, _size(masks), outcomes[b], outcomes[h]))
    rules.sort(key=lambda r: (-r.cells, r.masks))
    return rules


def cover(cells: list[tuple[int, ...]], naxes: int) -> list[tuple[int, ...]]:
    """Few disjoint cubes whose union is exactly `cells` (merging in two axis orders)."""
    orders = [list(reversed(range(naxes))), list(range(naxes))]
    covers = [_merge({tuple(1 << d for d in cell) for cell in cells}, o) for o in orders]
    return sorted(min(covers, key=len))


def _merge(cubes: set[tuple[int, ...]], order: list[int]) -> set[tuple[int, ...]]:
    """Merge cubes that differ on one axis only, until nothing merges."""
    merged = True
    while merged:
        merged = False
        for axis in order:
            groups: dict[tuple[int, ...], int] = {}
            for cube in cubes:
                key = cube[:axis] + cube[axis + 1 :]
                groups[key] = groups.get(key, 0) | cube[axis]
            if len(groups) < len(cubes):
                merged = True
                cubes = {(*key[:axis], mask, *key[axis:]) for key, mask in groups.items()}
    return cubes


def _size(masks: tuple[int, ...]) -> int:
    total = 1
    for mask in masks:
        total *= len(bits_of(mask))
    return total

"""Which passes of a pipeline run on which cells, and why the others do not.

A pass runs on every cell unless it is absent at the revision, or the matrix
guards it (`target.guards`, standing in for the `if` SGLang's handler runs it
under): then it runs on the cells where the guard holds, counted by
exploring the guard (a binding of the matrix, never the evaluated code) over
the axes it reads. A cell whose outcome is an error stopped at the pass that
raised; the passes after it did not run there (the report's error rules say
which cells those are).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.matrix.cells import bits_of, first_cell
from harness.matrix.model import Matrix

if TYPE_CHECKING:  # a stored report's coverage is read back without the engine
    from harness.closure.extract import Pipeline
    from harness.engine.world import Bound

ABSENT = "absent at this revision"


@dataclass(frozen=True)
class PassCoverage:
    name: str
    cells: int  # cells it runs on (before any error)
    why: str = ""  # why not on every cell: "" when it does


GUARDED = "target.guards"


def coverage(
    size: int, pipeline: Pipeline, guard_cells: Callable[[str], int | None]
) -> tuple[PassCoverage, ...]:
    """Each pass of `pipeline`, in order, with the cells it runs on (`guard_cells(name)`:
    where the matrix's guard for it holds, None when it has none)."""
    out = []
    for name, closure in pipeline.passes:
        cells = guard_cells(name) if closure is not None else 0
        if closure is None:
            out.append(PassCoverage(name, 0, ABSENT))
        elif cells is None or cells == size:
            out.append(PassCoverage(name, size))
        else:
            out.append(PassCoverage(name, cells, GUARDED))
    return tuple(out)


def true_cells(matrix: Matrix, bound: Bound, guard, name: str) -> int:
    """How many cells the guard holds on: one call per region of equal answer."""
    from harness.engine.world import Unbound

    probe, total, stack = bound.probe, 0, [matrix.full_masks()]
    while stack:
        cube = stack.pop()
        cell = first_cell(cube)
        probe.start(cell)
        try:
            holds = bool(guard())
        except Unbound as exc:
            where = f"{matrix.source}: target.guards.{name}"
            raise HarnessError(f"{where}: {exc.what}: {exc.fix}") from None
        finally:
            probe.unbound = None
        region = list(cube)
        for axis in bits_of(probe.read):
            rest = region[axis] & ~(1 << cell[axis])
            if rest:
                stack.append((*region[:axis], rest, *region[axis + 1 :]))
            region[axis] = 1 << cell[axis]
        if holds:
            size = 1
            for mask in region:
                size *= len(bits_of(mask))
            total += size
    return total


def coverage_line(entries: tuple[PassCoverage, ...], size: int) -> str:
    """`passes: 40 run; on some cells only: a (1,234), ...; on none: b, c`."""
    partial = [f"{e.name} ({e.cells:,})" for e in entries if 0 < e.cells < size]
    none = [e.name for e in entries if e.cells == 0]
    parts = [f"passes: {sum(e.cells == size for e in entries)} of {len(entries)} run on every cell"]
    if partial:
        parts.append(f"on some cells only: {', '.join(partial)}")
    if none:
        parts.append(f"on none: {', '.join(none)}")
    return "; ".join(parts)

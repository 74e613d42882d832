"""Run a loaded target over a matrix and tabulate the outcomes.

By default the matrix is covered by *exploration*: each call records the
axes it read (through the world's probe), and its outcome holds for every
cell agreeing on those axes, so the function runs once per decision path
rather than once per cell. `exhaustive=True` runs every cell.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.closure.extract import Closure, Pipeline
from harness.engine.outcome import ERROR, KEPT, VALUE, Filler, Outcome, OutcomeTable, zero_codes
from harness.engine.sandbox import describe, line_in, load_target, unbound_reason
from harness.engine.world import Bound, Unbound
from harness.errors import Unevaluable
from harness.matrix.cells import Cube, bits_of, cube_runs, first_cell, iter_cells
from harness.matrix.model import Matrix


@dataclass
class Evaluation:
    table: OutcomeTable
    calls: int  # how many times the target ran


def evaluate_closure(
    closure: Closure | Pipeline,
    matrix: Matrix,
    bound: Bound,
    label: str,
    exhaustive: bool = False,
    cube: Cube | None = None,
) -> Evaluation:
    """The closure's outcome table; with `cube`, only the cells inside it are filled.

    Raises Unevaluable when the code cannot run at all (its reason names the line).
    """
    cube = cube or matrix.full_masks()
    fn = load_target(closure, bound, label)
    runner = _Runner(fn, bound, matrix)
    table = runner.run_all(cube) if exhaustive else runner.explore(cube)
    return Evaluation(table, runner.calls)


def run_cell(
    fn: Callable[..., Any], bound: Bound, matrix: Matrix, cell: tuple[int, ...]
) -> Outcome:
    """The outcome of one call on one cell (raises Unevaluable as a whole table would)."""
    runner = _Runner(fn, bound, matrix)
    code, _ = runner.run(cell)
    return runner.outcomes[code]


class _Runner:
    def __init__(self, fn: Callable[..., Any], bound: Bound, matrix: Matrix) -> None:
        self.fn, self.bound, self.matrix = fn, bound, matrix
        self.outputs = matrix.target.outputs
        self.outcomes: list[Outcome] = []
        self.codes: dict[tuple[str, Any], int] = {}
        self.calls = 0

    def run(self, cell: tuple[int, ...]) -> tuple[int, int]:
        """The outcome code of `cell` and the bitmask of axes the call read."""
        probe = self.bound.probe
        probe.cell, probe.read = cell, 0
        self.calls += 1
        try:
            result = self.fn(self.bound.view)
        except Unbound as exc:
            raise Unevaluable(unbound_reason(exc), exc.field) from None
        except NameError as exc:
            where = line_in(exc.__traceback__)
            raise Unevaluable(f"{describe(exc)} at {where}") from None
        except Exception as exc:
            outcome = Outcome(ERROR, describe(exc))
        else:
            outcome = self._declared(result)
        return self._code(outcome), probe.read

    def _declared(self, result: Any) -> Outcome:
        if not isinstance(result, dict):
            kind = type(result).__name__
            return Outcome(ERROR, f"TypeError: returned {kind}, not a dict of declared fields")
        if len(self.outputs) == 1:
            field = self.outputs[0]
            return Outcome(VALUE, result[field]) if field in result else Outcome(KEPT)
        pairs = tuple((f, result[f]) for f in self.outputs if f in result)
        return Outcome(VALUE, pairs) if pairs else Outcome(KEPT)

    def _code(self, outcome: Outcome) -> int:
        code = self.codes.get(outcome.key)
        if code is None:
            code = self.codes[outcome.key] = len(self.outcomes)
            self.outcomes.append(outcome)
        return code

    def run_all(self, cube: Cube) -> OutcomeTable:
        """Run every cell of the cube (cells outside it keep code 0)."""
        codes = zero_codes(self.matrix.size)
        starts, length = cube_runs(self.matrix, cube)
        indices = (start + j for start in starts for j in range(length))
        for index, cell in zip(indices, iter_cells(cube), strict=True):
            codes[index] = self.run(cell)[0]
        return OutcomeTable(self.outcomes, codes)

    def explore(self, cube: Cube) -> OutcomeTable:
        """Cover the cube by decision paths: one call per region of equal outcome."""
        filler = Filler(self.matrix)
        stack = [cube]
        while stack:
            cube = stack.pop()
            cell = first_cell(cube)
            code, read = self.run(cell)
            region = list(cube)
            for axis in bits_of(read):
                rest = region[axis] & ~(1 << cell[axis])
                if rest:
                    stack.append((*region[:axis], rest, *region[axis + 1 :]))
                region[axis] = 1 << cell[axis]
            filler.fill(region, code)
        return OutcomeTable(self.outcomes, filler.codes)

"""Run a loaded target over a matrix and tabulate the outcomes.

By default the matrix is covered by *exploration*: each call records the
axes it read (through the world's probe), and its outcome holds for every
cell agreeing on those axes, so the function runs once per decision path
rather than once per cell. That is exact for code that keeps no state
between calls (`harness.engine.purity`), and for any code whose every call
starts from a fresh copy of its modules, as an impure closure's does (in
SGLang's process, too, one resolution runs once): its outcome then depends on
nothing but the inputs the call read. `exhaustive=True` runs every cell.

All of it happens in a worker process (`harness.engine.worker`); what comes
back is the table as plain data. Whatever the code raises, `SystemExit`
included, is that cell's `error` outcome; a read nothing answers, or a write
to the view or another object of the world, makes the revision unevaluable
even when the code catches it.
"""

from __future__ import annotations

import functools
from array import array
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from harness.closure.extract import Closure, Pipeline
from harness.engine.branches import Recorder, Sites, check_reached, flags_from_hex
from harness.engine.limits import DEFAULT_LIMITS, Limits
from harness.engine.outcome import (
    CODE_TYPE,
    ERROR,
    KEPT,
    VALUE,
    Filler,
    Outcome,
    OutcomeTable,
    check_outcome_count,
    codes_below,
    decode_outcome,
    encode_outcomes,
    zero_codes,
)
from harness.engine.plain import Malformed, plain_problem
from harness.engine.purity import impurity, shared_state
from harness.engine.sandbox import describe, line_in, target_loader, unbound_reason
from harness.engine.worker import start
from harness.engine.world import Bound, with_defaults
from harness.errors import Unevaluable
from harness.matrix.cells import Cube, bits_of, cube_runs, first_cell, iter_cells
from harness.matrix.model import Matrix

# how a worker covers the cells: explored, every cell, every cell or explored with each
# call in a fresh copy of the modules (code that may keep state between calls)
EXPLORE, EVERY, FRESH, FRESH_EXPLORE = "explore", "every", "fresh", "fresh-explore"
FRESH_MODES = (FRESH, FRESH_EXPLORE)


@dataclass
class Evaluation:
    table: OutcomeTable
    calls: int  # how many times the target ran
    loads: int = 1  # how many times its modules' bodies ran (FRESH: once more than calls)


def evaluate_closure(
    closure: Closure | Pipeline,
    matrix: Matrix,
    bound: Bound,
    label: str,
    exhaustive: bool = False,
    cube: Cube | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Evaluation:
    """The closure's outcome table; with `cube`, only the cells inside it are filled.
    Every cell is run when `exhaustive`; a closure that may keep state runs each call in
    a fresh copy of its modules.

    Raises Unevaluable when the code cannot run at all (its reason names the line).
    """
    impure = impurity(closure) is not None
    return start_evaluation(closure, matrix, bound, label, exhaustive, cube, limits,
                            impure).result()  # fmt: skip


def start_evaluation(
    closure: Closure | Pipeline,
    matrix: Matrix,
    bound: Bound,
    label: str,
    every_cell: bool,
    cube: Cube | None = None,
    limits: Limits = DEFAULT_LIMITS,
    fresh: bool | None = None,
):
    """`evaluate_closure` started in a worker: `.result()` waits for the Evaluation.
    `fresh` (run each call in a fresh copy of the modules: the closure may keep state) is
    judged here when not given."""
    return start(*evaluation_job(closure, matrix, bound, label, every_cell, cube, fresh), limits)


def evaluation_job(
    closure: Closure | Pipeline, matrix: Matrix, bound: Bound, label: str, every_cell: bool,
    cube: Cube | None = None, fresh: bool | None = None,
) -> tuple:  # fmt: skip
    """(work, encode, decode) of `start_evaluation`, for a worker of its own or a batch's."""
    mode = evaluation_mode(closure, every_cell, fresh)
    work = functools.partial(_evaluate, closure, matrix, bound, label, mode,
                             cube or matrix.full_masks())  # fmt: skip
    return work, _encode, functools.partial(_decode, size=matrix.size)


def evaluation_mode(closure: Closure | Pipeline, every_cell: bool, fresh: bool | None) -> str:
    """How a worker covers the cells (see `start_evaluation`)."""
    if fresh is None:
        fresh = impurity(closure) is not None
    if fresh:
        return FRESH if every_cell else FRESH_EXPLORE
    return EVERY if every_cell else EXPLORE


def _evaluate(
    closure: Closure | Pipeline, matrix: Matrix, bound: Bound, label: str, mode: str,
    cube: Cube,
) -> Evaluation:  # fmt: skip
    """In the worker: the evaluation itself. In the FRESH modes every call loads the
    modules anew (compiled once): its first call is the modules' first, as in SGLang,
    where one process resolves one configuration. Module-level code that reads an input of the
    cell (`_IS_HIP = is_hip()`) is run again for each call too, explored or not: its
    value is each cell's, and the inputs it read count among the call's."""
    fresh = mode in FRESH_MODES
    shared = shared_state(closure) if fresh and isinstance(closure, Pipeline) else None
    if shared is not None:
        raise Unevaluable(shared)
    view = with_defaults(bound, closure.defaults)
    recorder = Recorder(lambda: view.probe.cell)
    sites = Sites(recorder.grow)
    loader = _CountedLoader(target_loader(closure, view, label, (sites, recorder.names())))
    view.probe.read = 0
    fn = loader()
    at_import = view.probe.read != 0  # module-level code read the cell, as SGLang's import
    runner = _Runner(fn, view, matrix, loader if fresh or at_import else None)
    table = runner.run_all(cube) if mode in (EVERY, FRESH) else runner.explore(cube)
    reached = tuple(-1 if c is None else matrix.index(c) for c in recorder.first)
    table = replace(table, branches=bytes(recorder.flags), reached=reached)
    return Evaluation(table, runner.calls, loader.loads)


class _CountedLoader:
    """A loader that counts its loads (the Evaluation reports them)."""

    def __init__(self, load: Callable[[], Callable[..., Any]]) -> None:
        self.load, self.loads = load, 0

    def __call__(self) -> Callable[..., Any]:
        self.loads += 1
        return self.load()


def _encode(evaluation: Evaluation) -> tuple[dict, bytes]:
    table = evaluation.table
    outcomes = encode_outcomes(table.outcomes)  # within the budgets, or Unevaluable
    header = {"outcomes": outcomes, "calls": evaluation.calls, "loads": evaluation.loads,
              "branches": table.branches.hex(), "reached": list(table.reached)}  # fmt: skip
    return header, table.codes.tobytes()


def _decode(header: dict, payload: bytes, size: int) -> Evaluation:
    """The evaluation as the worker sent it, checked: known kinds, plain values, codes
    that index the outcomes, one branch flag and one reached cell per site; no more
    outcomes than a table holds."""
    check_outcome_count(len(header["outcomes"]))
    outcomes = [decode_outcome(item) for item in header["outcomes"]]
    codes = array(CODE_TYPE)
    codes.frombytes(payload)
    if len(codes) != size or not codes_below(codes, max(1, len(outcomes))):
        raise Malformed(f"{len(codes)} codes for {size} cells, or codes past the outcomes")
    calls, loads = header["calls"], header["loads"]
    if type(calls) is not int or type(loads) is not int:
        raise Malformed("calls or loads is not an int")
    branches = flags_from_hex(header["branches"])
    reached = check_reached(header["reached"], len(branches), size)
    return Evaluation(OutcomeTable(outcomes, codes, branches, reached), calls, loads)


def run_cell(
    fn: Callable[..., Any], bound: Bound, matrix: Matrix, cell: tuple[int, ...]
) -> Outcome:
    """The outcome of one call on one cell (raises Unevaluable as a whole table would)."""
    runner = _Runner(fn, bound, matrix)
    code, _ = runner.run(cell)
    return runner.outcomes[code]


class _Runner:
    def __init__(
        self,
        fn: Callable[..., Any],
        bound: Bound,
        matrix: Matrix,
        fresh: Callable[[], Callable[..., Any]] | None = None,
    ) -> None:
        """`fresh`, if given, loads a new copy of the code: each run calls one of its own."""
        self.fn, self.bound, self.matrix, self.fresh = fn, bound, matrix, fresh
        self.outputs = matrix.target.outputs
        given = {*matrix.axis_names, *matrix.fields}
        self.unanswered = tuple(f for f in self.outputs if f not in given)
        self.outcomes: list[Outcome] = []
        self.codes: dict[tuple[str, Any], int] = {}
        self.calls = 0

    def run(self, cell: tuple[int, ...]) -> tuple[int, int]:
        """The outcome code of `cell` and the bitmask of axes the call read."""
        probe = self.bound.probe
        probe.start(cell)
        fn = self.fn if self.fresh is None else self.fresh()  # module-level code sees the cell
        self.calls += 1
        try:
            outcome = self._declared(self._with_defaults(fn(self.bound.view)))
        except MemoryError as exc:
            raise Unevaluable(
                f"ran out of memory under the worker's limit (--memory-limit) at "
                f"{line_in(exc.__traceback__)}"
            ) from None
        except NameError as exc:
            outcome = exc
        except BaseException as exc:  # SystemExit too: the code's error, not the harness's
            outcome = Outcome(ERROR, describe(exc))
        if probe.unbound is not None:  # raised, whether or not the code caught it
            raise Unevaluable(unbound_reason(probe.unbound), probe.unbound.field)
        if isinstance(outcome, NameError):
            where = line_in(outcome.__traceback__)
            raise Unevaluable(f"{describe(outcome)} at {where}")
        return self._code(outcome), probe.read

    def _with_defaults(self, result: Any) -> Any:
        """The result with each output field that is neither an axis nor a field, and that
        the code left alone, at the view's value of it (the default the view's class
        declares at this revision): inputs may differ between revisions, so the value is
        part of the outcome, never `kept`."""
        if not self.unanswered or type(result) is not dict:
            return result
        view = self.bound.view
        return {**{f: getattr(view, f) for f in self.unanswered if f not in result}, **result}

    def _declared(self, result: Any) -> Outcome:
        """The outcome of a returned value: a dict of plain values, else an error."""
        if type(result) is not dict:
            kind = type(result).__name__
            return Outcome(ERROR, f"TypeError: returned {kind}, not a dict of declared fields")
        values = [(f, result[f]) for f in self.outputs if f in result]
        for name, value in values:
            problem = plain_problem(value)
            if problem:
                return Outcome(ERROR, f"TypeError: {name} is {problem}")
        values = [(f, _copied(v)) for f, v in values]  # a later call may change a list kept
        if len(self.outputs) == 1:
            return Outcome(VALUE, values[0][1]) if values else Outcome(KEPT)
        return Outcome(VALUE, tuple(values)) if values else Outcome(KEPT)

    def _code(self, outcome: Outcome) -> int:
        code = self.codes.get(outcome.key)
        if code is None:
            check_outcome_count(len(self.outcomes) + 1)  # stop as soon as it is too many
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


def _copied(value: Any) -> Any:
    """A plain value with its lists made anew (what the code may still hold, and change)."""
    if type(value) is list:
        return [_copied(item) for item in value]
    if type(value) is tuple:
        return tuple(_copied(item) for item in value)
    return value

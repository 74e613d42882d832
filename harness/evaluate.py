"""Run an extracted closure over a matrix and tabulate the outcomes.

The closure is compiled in a fresh namespace holding only the world's
bindings and a small set of builtins. By default the matrix is covered by
*exploration*: each call records the axes it read, and its outcome holds for
every cell agreeing on those axes, so the function runs once per decision
path rather than once per cell. `exhaustive=True` runs every cell.
"""

from __future__ import annotations

import builtins
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from harness.errors import Absent, Unevaluable
from harness.extract import ALLOWED_BUILTINS, Closure, Pipeline, extract_closure, extract_pipeline
from harness.matrix import Matrix, bits_of, cube_runs, iter_cells
from harness.world import Bound, Unbound

VALUE, KEPT, ERROR, ABSENT, UNEVALUABLE = "value", "kept", "error", "absent", "unevaluable"
CODE_TYPE = "I"


@dataclass(frozen=True)
class Outcome:
    """One cell's result: a declared value, the kept input, an error, or a revision-wide state."""

    kind: str
    value: Any = None

    @property
    def revision_wide(self) -> bool:
        return self.kind in (ABSENT, UNEVALUABLE)

    @property
    def key(self) -> tuple[str, Any]:
        """A hashable identity, also for unhashable declared values (a list)."""
        return (self.kind, freeze(self.value))


@dataclass
class OutcomeTable:
    """Distinct outcomes, and one code per cell indexing into them."""

    outcomes: list[Outcome]
    codes: array

    def outcome_at(self, index: int) -> Outcome:
        return self.outcomes[self.codes[index]]


@dataclass
class Evaluation:
    table: OutcomeTable
    closure: Closure | None
    calls: int


def uniform_table(outcome: Outcome, size: int) -> OutcomeTable:
    return OutcomeTable([outcome], array(CODE_TYPE, bytes(array(CODE_TYPE).itemsize * size)))


def evaluate(
    source: str | None, matrix: Matrix, bound: Bound, label: str, exhaustive: bool = False
) -> Evaluation:
    """The outcome table of the target in `source` (None: the file does not exist).

    Reasons do not name the revision (`label` only names the compiled code), so
    the same failure at two revisions is the same outcome; reports add the revision.
    """
    try:
        closure = extract(source, matrix, bound)
    except (Absent, Unevaluable) as exc:
        return revision_wide(exc, matrix)
    return evaluate_closure(closure, matrix, bound, label, exhaustive)


def extract(source: str | None, matrix: Matrix, bound: Bound) -> Closure | Pipeline:
    """The target's closure (or each pass's) in `source`; raises Absent or Unevaluable."""
    target = matrix.target
    if source is None:
        raise Absent(f"{target.path} does not exist")
    if target.pipeline:
        return extract_pipeline(source, target.path, target.passes, bound.names, matrix.edit_hint)
    return extract_closure(source, target.path, target.function, bound.names, matrix.edit_hint)


def evaluate_closure(
    closure: Closure,
    matrix: Matrix,
    bound: Bound,
    label: str,
    exhaustive: bool = False,
    cube: tuple[int, ...] | None = None,
) -> Evaluation:
    """The closure's outcome table; with `cube`, only the cells inside it are filled."""
    cube = cube or matrix.full_masks()
    try:
        fn = load_target(closure, bound, label)
        runner = _Runner(fn, bound, matrix, code_name(closure.path, label))
        table = runner.run_all(cube) if exhaustive else runner.explore(cube)
    except Unevaluable as exc:
        return revision_wide(exc, matrix)
    return Evaluation(table, closure, runner.calls)


def revision_wide(exc: Absent | Unevaluable, matrix: Matrix) -> Evaluation:
    """The one outcome of every cell when the revision cannot run at all."""
    kind = ABSENT if isinstance(exc, Absent) else UNEVALUABLE
    return Evaluation(uniform_table(Outcome(kind, str(exc)), matrix.size), None, 0)


# --- loading -----------------------------------------------------------------------


def code_name(path: str, label: str) -> str:
    """The file name evaluated code is compiled under: the path and the revision."""
    return f"{path}@{label}"


def load_target(closure: Closure | Pipeline, bound: Bound, label: str) -> Callable[..., Any]:
    """The callable a cell runs: the target function, or the passes chained."""
    if isinstance(closure, Pipeline):
        passes = [load_function(c, bound, label) for _, c in closure.passes if c is not None]
        return chain(passes)
    return load_function(closure, bound, label)


def chain(passes: list[Callable[..., Any]]) -> Callable[..., Any]:
    """Run passes in order, each seeing the view with the earlier declarations overlaid."""

    def pipeline(view: Any) -> dict[str, Any]:
        declared: dict[str, Any] = {}
        for fn in passes:
            result = fn(Overlay(view, declared))
            if not isinstance(result, dict):
                kind = type(result).__name__
                raise TypeError(f"{fn.__name__} returned {kind}, not a dict of declared fields")
            declared.update(result)
        return declared

    return pipeline


class Overlay:
    """The view as a later pass sees it: declared fields first, then the view itself."""

    __slots__ = ("_declared", "_view")

    def __init__(self, view: Any, declared: dict[str, Any]) -> None:
        object.__setattr__(self, "_view", view)
        object.__setattr__(self, "_declared", declared)

    def __getattr__(self, name: str) -> Any:
        declared = object.__getattribute__(self, "_declared")
        if name in declared:
            return declared[name]
        return getattr(object.__getattribute__(self, "_view"), name)


def load_function(
    closure: Closure, bound: Bound, label: str, extra: dict[str, Any] | None = None
) -> Callable[..., Any]:
    """Compile the closure alone and return the target function object."""
    filename = code_name(closure.path, label)
    code = compile(closure.module(), filename, "exec")
    namespace = {"__builtins__": safe_builtins(bound), "__name__": "harness.closure"}
    namespace.update({name: bound.names[world_name] for name, world_name in closure.needs})
    namespace.update(extra or {})
    try:
        exec(code, namespace)
    except Unbound as exc:
        raise Unevaluable(_unbound_reason(exc, filename)) from None
    except Exception as exc:
        raise Unevaluable(f"module-level code of the closure raised {_describe(exc)}") from None
    return namespace[closure.function]


def safe_builtins(bound: Bound) -> dict[str, Any]:
    table = {name: getattr(builtins, name) for name in ALLOWED_BUILTINS if hasattr(builtins, name)}
    table["print"] = lambda *args, **kwargs: None
    table["__import__"] = _ImportProxy.factory(bound)
    return table


class _ImportProxy:
    """`import` inside evaluated code: a module whose attributes are the world's names."""

    def __init__(self, module: str, names: dict[str, Any]) -> None:
        self._module, self._names = module, names

    @classmethod
    def factory(cls, bound: Bound) -> Callable[..., Any]:
        def world_import(name: str, *args: Any, **kwargs: Any) -> Any:
            return cls(name, bound.names)

        return world_import

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._names[name]
        except KeyError:
            raise Unbound(
                f"{self._module}.{name}",
                "the world does not bind it: bind the name under `bindings:` in the matrix",
            ) from None


# --- running -----------------------------------------------------------------------


def run_cell(
    fn: Callable[..., Any], bound: Bound, matrix: Matrix, cell: tuple[int, ...], label: str
) -> Outcome:
    """The outcome of one call on one cell (raises Unevaluable as a whole table would)."""
    runner = _Runner(fn, bound, matrix, code_name(matrix.target.path, label))
    code, _ = runner.run(cell)
    return runner.outcomes[code]


class _Runner:
    def __init__(self, fn: Callable[..., Any], bound: Bound, matrix: Matrix, filename: str) -> None:
        self.fn, self.bound, self.matrix = fn, bound, matrix
        self.filename = filename  # the compiled code's name: error lines are found by it
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
            raise Unevaluable(_unbound_reason(exc, self.filename)) from None
        except NameError as exc:
            where = _line_in(exc.__traceback__, self.filename)
            raise Unevaluable(f"{_describe(exc)} at {where}") from None
        except Exception as exc:
            outcome = Outcome(ERROR, _describe(exc))
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

    def run_all(self, cube: tuple[int, ...]) -> OutcomeTable:
        """Run every cell of the cube (cells outside it keep code 0)."""
        codes = array(CODE_TYPE, bytes(array(CODE_TYPE).itemsize * self.matrix.size))
        starts, length = cube_runs(self.matrix, cube)
        indices = (start + j for start in starts for j in range(length))
        for index, cell in zip(indices, iter_cells(cube), strict=True):
            codes[index] = self.run(cell)[0]
        return OutcomeTable(self.outcomes, codes)

    def explore(self, cube: tuple[int, ...]) -> OutcomeTable:
        """Cover the cube by decision paths: one call per region of equal outcome."""
        filler = Filler(self.matrix)
        stack = [cube]
        while stack:
            cube = stack.pop()
            cell = tuple((mask & -mask).bit_length() - 1 for mask in cube)
            code, read = self.run(cell)
            region = list(cube)
            for axis in bits_of(read):
                rest = region[axis] & ~(1 << cell[axis])
                if rest:
                    stack.append((*region[:axis], rest, *region[axis + 1 :]))
                region[axis] = 1 << cell[axis]
            filler.fill(region, code)
        return OutcomeTable(self.outcomes, filler.codes)


class Filler:
    """Writes one code over every cell of a cube, a contiguous run at a time."""

    def __init__(self, matrix: Matrix, initial: int = 0) -> None:
        self.matrix = matrix
        self.codes = array(CODE_TYPE, [initial]) * matrix.size
        self.pieces: dict[tuple[int, int], array] = {}

    def fill(self, masks: list[int] | tuple[int, ...], code: int) -> None:
        starts, length = cube_runs(self.matrix, tuple(masks))
        piece = self.pieces.get((code, length))
        if piece is None:
            piece = self.pieces[(code, length)] = array(CODE_TYPE, [code]) * length
        for start in starts:
            self.codes[start : start + length] = piece


# --- messages ----------------------------------------------------------------------


def _unbound_reason(exc: Unbound, filename: str) -> str:
    return f"{exc.what} is read at {_line_in(exc.__traceback__, filename)}: {exc.fix}"


def _line_in(tb: TracebackType | None, filename: str) -> str:
    """`path:line` of the innermost frame of the evaluated code."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    path = filename.rsplit("@", 1)[0]
    return f"{path}:{line}" if line else path


def _describe(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def freeze(value: Any) -> Any:
    """A hashable, type-aware identity for a value (1, 1.0 and True differ)."""
    try:
        hash(value)
    except TypeError:
        return ("unhashable", repr(value))
    return (type(value).__name__, value)

"""What would take a condition the other way: one input changed at a time, on one cell.

A blind spot is a condition of changed code that the matrix took one way only,
or a block it never entered (`harness.scan.blind`). To say which input would
reach the other way, the code runs again on a cell where the condition was
reached, in a *widened* matrix where every input the world answers by name is
an axis: the matrix's axes, its fields, the literal defaults the code
declares, the world's own inputs. The probe then records every input the call
read, and each is tried, one at a time, at other values: the world's usual
values for it, the literals the code compares with (and their neighbours),
null and the booleans. The first that takes the condition the needed way is
the answer. It runs in a worker, like every evaluation, under the run's limits.
"""

from __future__ import annotations

import ast
import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from harness.closure.extract import Closure, Pipeline
from harness.engine.batch import Batch, started
from harness.engine.branches import OPERAND, Sites, closures_of, recording
from harness.engine.limits import DEFAULT_LIMITS, Limits
from harness.engine.plain import MAX_ANSWERS, Malformed, decode, decode_items, encode, within_size
from harness.engine.sandbox import load_order, target_loader
from harness.engine.world import Native, Param, Probe, World, bind_with_defaults
from harness.engine.worlds import world_named
from harness.errors import HarnessError
from harness.matrix.cells import bits_of
from harness.matrix.model import SCALAR_TYPES, Axis, Matrix

ANY = 0  # a question's way: reached at all
MAX_RUNS = 300  # calls per question, at most
MAX_TOTAL = 4_000  # calls per worker, at most: the search is a help, not the finding
MAX_CANDIDATES = 100  # values tried per input, at most


@dataclass(frozen=True)
class Question:
    site: int  # the site whose way is wanted
    way: int  # TRUE, FALSE, or ANY (reached at all)
    cell: int  # a cell of the matrix on which the search starts


@dataclass(frozen=True)
class Answer:
    reads: tuple[str, ...]  # the inputs read while the condition was evaluated
    name: str | None = None  # the input whose change takes it the wanted way
    value: Any = None  # that input's value that does
    was: Any = None  # its value on the cell


def start_asking(
    target: Closure | Pipeline,
    matrix: Matrix,
    label: str,
    questions: list[Question],
    limits: Limits = DEFAULT_LIMITS,
    batch: Batch | None = None,
):
    """The answers to `questions` about one revision's code, started in a worker (or
    joining `batch`, of the same revision's jobs): `.result()` waits for them (one
    Answer per question)."""
    work = functools.partial(_answers, target, matrix, label, questions)
    decode = functools.partial(decode_items, count=len(questions), item=_decode,
                               what="answer per question")  # fmt: skip
    return started((work, _encode_all, decode), limits, batch)


def _answers(
    target: Closure | Pipeline, matrix: Matrix, label: str, questions: list[Question]
) -> list[Answer]:
    """In the worker: each question answered."""
    world = world_named(matrix.world, matrix.source)
    wide, promoted, widen = widened(matrix, target, world, literals_of(target, world))
    bound = bind_with_defaults(world, wide, target.defaults)
    events: list[tuple[int, int, int]] = []
    sites = Sites()
    load = target_loader(target, bound, label, (sites, _watchers(events, bound.probe)))
    bound.probe.read = 0
    fn = load()
    fresh = load if bound.probe.read else None  # module-level code read the cell: per run
    runner = _Asker(fn, bound, wide, events, [site.kind for site in sites.sites], fresh, widen)
    return [runner.ask(q, (*matrix.cell(q.cell), *[0] * promoted)) for q in questions]


def _encode_all(answers: list[Answer]) -> tuple[Any, bytes]:
    data = [[list(a.reads), a.name, encode(a.value), encode(a.was)] for a in answers]
    return within_size(data, f"the {len(answers):,} answers", MAX_ANSWERS), b""


def _decode(item: Any) -> Answer:
    reads, name, value, was = item
    if type(reads) is not list or any(type(r) is not str for r in reads):
        raise Malformed("an answer's reads are not names")
    if name is not None and type(name) is not str:
        raise Malformed("an answer's input is not a name")
    return Answer(tuple(r[:200] for r in reads[:50]), name, decode(value), decode(was))


class _Asker:
    def __init__(
        self, fn, bound: Any, wide: Matrix, events: list, kinds: list[str], fresh=None,
        widen: Callable[[int], tuple[Any, ...]] | None = None,
    ) -> None:  # fmt: skip
        """`fresh`, if given, loads the code again for each run (its module level reads
        the cell, as SGLang's import does in each process). `widen(axis)`: the values of an
        input worth trying, made when a run first reads it (see `widened`)."""
        self.fn, self.bound, self.events = fn, bound, events
        self.names = [axis.name for axis in wide.axes]
        self.values = bound.probe.values  # each axis's values, as the probe answers them
        self.widen, self.wide_axes = widen, set()
        self.kinds = kinds  # each site's kind (TEST, OPERAND, BLOCK)
        self.budget = MAX_TOTAL  # calls left for every question after this one
        self.fresh = fresh

    def widened(self, axes: int) -> None:
        """The axes in the mask with every value worth trying (made once each)."""
        for axis in bits_of(axes):
            if self.widen is not None and axis not in self.wide_axes:
                self.wide_axes.add(axis)
                self.values[axis] = self.widen(axis)

    def run(self, cell: tuple[int, ...]) -> int:
        """Run one cell; the axes it read (at import too, when loaded for it)."""
        probe: Probe = self.bound.probe
        probe.start(cell)
        self.events.clear()
        at_import = 0
        with contextlib.suppress(BaseException):  # the code's own error: only the ways count
            fn = self.fn if self.fresh is None else self.fresh()
            at_import = probe.read
            fn(self.bound.view)
        probe.unbound = None
        for _, _, read in self.events:
            probe.read |= read
        probe.read |= at_import
        return probe.read

    def took(self, question: Question) -> bool:
        want = question.way
        return any(s == question.site and (want == ANY or f == want) for s, f, _ in self.events)

    def reads_at(self, site: int) -> int:
        """The axes read while the site's condition was evaluated: since the event before,
        and, for a test of `and`/`or` operands, while those operands were."""
        found = next((n for n, event in enumerate(self.events) if event[0] == site), None)
        if found is None:
            return 0
        read = self.events[found][2]
        while found > 0 and self.kinds[self.events[found - 1][0]] == OPERAND:
            found -= 1
            read |= self.events[found][2]
        return read

    def ask(self, question: Question, cell: tuple[int, ...]) -> Answer:
        read = self.run(cell)
        reached = any(s == question.site for s, _, _ in self.events)
        if self.took(question) or (question.way != ANY and not reached):
            return Answer(())  # not what the evaluation saw on this cell: no answer is sure
        near = self.reads_at(question.site) if reached else 0
        names = tuple(self.names[i] for i in bits_of(near))
        self.widened(near | read)
        for runs, (axis, value) in enumerate(self.tries(cell, near, read)):
            if runs >= MAX_RUNS or self.budget <= 0:
                break
            self.budget -= 1
            self.run((*cell[:axis], value, *cell[axis + 1 :]))
            if self.took(question):
                values = self.values[axis]
                return Answer(names, self.names[axis], values[value], values[cell[axis]])
        return Answer(names)

    def tries(self, cell: tuple[int, ...], near: int, read: int) -> Iterator[tuple[int, int]]:
        """(axis, value) in the order they are tried: every value of the inputs the
        condition itself read, then the other inputs the call read, their first values
        before their later ones (a condition reading only what earlier code declared, or
        never reached, may turn on any of them)."""
        for axis in bits_of(near):
            yield from ((axis, v) for v in range(len(self.values[axis])) if v != cell[axis])
        rest = [axis for axis in bits_of(read) if not near >> axis & 1]
        depth = max((len(self.values[axis]) for axis in rest), default=0)
        for value in range(depth):
            for axis in rest:
                if value < len(self.values[axis]) and value != cell[axis]:
                    yield axis, value


def _watchers(events: list, probe: Probe) -> dict[str, Callable[..., Any]]:
    """Recording functions that log (site, way, axes read since the event before) for
    every report (the probe's mask starts again at each: a read of an axis read before
    counts again)."""

    def log(site: int, way: int) -> None:
        events.append((site, way, probe.read))
        probe.read = 0

    return recording(log)


# --- the widened matrix -------------------------------------------------------------


def widened(
    matrix: Matrix, target: Closure | Pipeline, world: World, literals: Literals
) -> tuple[Matrix, int, Callable[[int], tuple[Any, ...]]]:
    """The matrix with every named input an axis; how many axes were added after the
    matrix's own (each at its current value first); and `widen(axis)`, the axis's values
    worth trying. The matrix's own axes have them already; an added one (there are
    hundreds: every declared default) only its current value until a run reads it."""
    given = set(matrix.axis_names)
    promoted: dict[str, Any] = {}
    for name, value in _inputs(matrix, target, world):
        if name not in given and name not in promoted:
            promoted[name] = value
    added = [Axis(n, (v,)) for n, v in promoted.items()]
    own = [_wider(matrix, world, a, literals.candidates(a.name, world, a.values[0]))
           for a in matrix.axes]  # fmt: skip
    wide = replace(matrix, axes=(*own, *added), fields={})

    def widen(index: int) -> tuple[Any, ...]:
        axis = wide.axes[index]
        if index < len(own):
            return axis.values
        candidates = literals.candidates(axis.name, world, axis.values[0])
        return _wider(matrix, world, axis, candidates).values

    return wide, len(added), widen


def _wider(matrix: Matrix, world: World, axis: Axis, candidates: list[Any]) -> Axis:
    """The axis with the candidates it lacks that the matrix's checks accept."""
    extra = _others(object(), candidates, axis.values)  # null too, unless the axis has it
    if not _valid(world, matrix, Axis(axis.name, tuple(extra))):  # checks refuse per value
        extra = [v for v in extra if _valid(world, matrix, Axis(axis.name, (v,)))]
    return Axis(axis.name, (*axis.values, *extra))


def _valid(world: World, matrix: Matrix, axis: Axis) -> bool:
    """Whether the matrix's checks accept the axis's values (the sglang world refuses a
    platform it does not know)."""
    if world.validate is None:
        return True
    try:
        world.validate(replace(matrix, axes=(axis,)))
    except HarnessError:
        return False
    return True


def _inputs(matrix: Matrix, target: Closure | Pipeline, world: World):
    """(name, value) of every input answered by name but not by an axis: the matrix's
    fields, the literal defaults the code declares, the world's optional inputs."""
    yield from matrix.fields.items()
    defaults = target.defaults
    for name, default in [*defaults.fields.items(), *defaults.inputs.items()]:
        answered = name in world.view_attrs_for(matrix)  # the world's answer stands
        if default.literal and isinstance(default.value, SCALAR_TYPES) and not answered:
            yield name, default.value
    for param in _params(world):
        if not param.required:
            yield param.name, param.default


def _params(world: World) -> list[Param]:
    """The named inputs the world's specs read (those it answers without the matrix)."""
    found: list[Param] = []
    stack: list[Any] = [*world.names.values(), *world.view_attrs.values()]
    while stack:
        spec = stack.pop()
        if isinstance(spec, Param):
            found.append(spec)
        elif isinstance(spec, dict):
            stack.extend(spec.values())
        elif isinstance(spec, tuple):
            stack.extend(spec)
        elif hasattr(spec, "__dataclass_fields__") and not isinstance(spec, Native):
            stack.extend(getattr(spec, f) for f in spec.__dataclass_fields__)
    return found


def _others(current: Any, values: list[Any], present: tuple[Any, ...] = ()) -> list[Any]:
    """`values` without `current`, those `present` and repeats, at most MAX_CANDIDATES."""
    out: list[Any] = []
    seen = {(type(v), v) for v in (current, *present) if _hashable(v)}
    for value in values:
        if len(out) >= MAX_CANDIDATES:
            break
        if _hashable(value) and (type(value), value) not in seen:
            seen.add((type(value), value))
            out.append(value)
    return out


def _hashable(value: Any) -> bool:
    return isinstance(value, SCALAR_TYPES)


@dataclass
class Literals:
    """The scalars the code compares with: by the name compared (`view.kv_cache_dtype ==
    "auto"` files "auto" under kv_cache_dtype), and all of them in order."""

    by_name: dict[str, list[Any]]
    every: list[Any]
    world: list[Any]  # the string constants of the world's classes (`Backend.FULL`)
    by_type: dict[type, list[Any]] = field(default_factory=dict)

    def candidates(self, name: str, world: World, current: Any) -> list[Any]:
        """Values worth trying for an input: those compared with its name, the world's
        usual values, then literals of the current value's type (for a boolean: the other
        one), then the world's constants and every literal, null and the booleans last."""
        named = self.by_name.get(name.rsplit(".", 1)[-1], [])
        typed = [True, False] if type(current) is bool else self.typed(type(current))
        return [*named, *world.suggested.get(name, ()), *typed, *self.world, *self.every,
                None, True, False]  # fmt: skip

    def typed(self, kind: type) -> list[Any]:
        if kind not in self.by_type:
            self.by_type[kind] = [v for v in self.every if type(v) is kind]
        return self.by_type[kind]


def literals_of(target: Closure | Pipeline, world: World) -> Literals:
    """The literals the code compares with (`x == "fa4"`, `x in ("a", "b")`, `x <= 1` and
    its neighbours 0 and 2), and the string constants of the world's classes."""
    found = Literals({}, [], [])
    for closure in closures_of(target):
        for path in load_order(closure):
            for node in closure.nodes_of(path):
                for compare in ast.walk(node):
                    if isinstance(compare, ast.Compare):
                        _file(compare, found)
    for spec in world.names.values():
        if isinstance(spec, Native) and isinstance(spec.value, type):
            found.world.extend(v for k, v in vars(spec.value).items() if not k.startswith("_")
                               and isinstance(v, str))  # fmt: skip
    found.every = list(dict.fromkeys((type(v), v) for v in found.every))  # each once
    found.every = [v for _, v in found.every]
    return found


def _file(compare: ast.Compare, found: Literals) -> None:
    sides = (compare.left, *compare.comparators)
    values = [v for side in sides for v in _constants(side)]
    found.every.extend(values)
    for side in sides:
        name = side.attr if isinstance(side, ast.Attribute) else getattr(side, "id", None)
        if isinstance(name, str):
            found.by_name.setdefault(name, []).extend(values)


def _constants(side: ast.expr) -> list[Any]:
    items = side.elts if isinstance(side, ast.List | ast.Tuple | ast.Set) else [side]
    out: list[Any] = []
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, SCALAR_TYPES):
            out.append(item.value)
            if type(item.value) is int:
                out.extend((item.value - 1, item.value + 1))
    return out

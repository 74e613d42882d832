"""`harness matrix --infer`: a starting matrix, written from the code.

Each chosen pass is run, in a worker, on a view whose undeclared attributes
are *symbols*: values that are falsy, equal to nothing, and remember every
plain value they are compared with (`view.attention_backend == "fa4"`,
`in ("flashmla", ...)`, `page_size not in [32, 64]`, through helpers and
`getattr` too). Each value found is then given to its attribute in a further
run, so both sides of each comparison run (up to MAX_RUNS runs per pass);
an attribute read but neither compared nor tested gets a run at `None` once
(`x is None` cannot be noted). The world's own inputs (the GPU, MLA, the
CUDA-graph modes) get the world's suggested values, and those the passes
read become axes. An input read only through the world (`envs.X`,
`model_config.X`) is an axis when compared with literals, else a field.

The layout: an axis for every input compared with literals (`null`, the
literals, and one value none of them names), a field for every other input
(the default the code declares for it, else `null`), and the names no one
binds; `harness.report.inferred_matrix` writes it as a matrix file, a user starts
from it and trims.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Any

from harness.closure.defaults import Default, Defaults
from harness.closure.extract import Closure
from harness.engine.explore import run_cell
from harness.engine.limits import Limits
from harness.engine.plain import Malformed
from harness.engine.sandbox import load_function
from harness.engine.worker import start
from harness.engine.world import Bound, Spec, World, bind, with_view_fallback
from harness.errors import Unevaluable
from harness.matrix.model import SCALAR_TYPES, Axis, Matrix, Target

MAX_RUNS = 40  # runs of one pass while following the values it compares inputs with
MAX_VALUES = 12  # literals kept per attribute (an axis of more is rarely what one wants)


@dataclass
class Notes:
    """What the runs of one discovery noted, in the worker (see `Symbol`)."""

    seen: dict[str, list] = field(default_factory=dict)  # attribute -> plain values compared
    tested: set[str] = field(default_factory=set)  # attributes whose truth was tested
    read: list[str] = field(default_factory=list)  # view attributes read, in order
    unknown: set[str] = field(default_factory=set)  # view attributes this run read as symbols
    touched: set[str] = field(default_factory=set)  # symbols this run compared or tested
    unbound: list[str] = field(default_factory=list)  # names imported inside a pass, unbound


class Symbol:
    """An input nobody declared: falsy, equal to nothing, noting in `notes` what it is
    compared with (a symbol made before the run notes nothing until `tied` to it)."""

    __slots__ = ("_name", "_notes")

    def __init__(self, name: str, notes: Notes | None = None) -> None:
        self._name, self._notes = name, notes

    def tied(self, notes: Notes) -> Symbol:
        return Symbol(self._name, notes)

    def _note(self, other: Any) -> None:
        notes = self._notes
        if type(other) in SCALAR_TYPES and notes is not None:
            notes.touched.add(self._name)
            values = notes.seen.setdefault(self._name, [])
            if not any(type(v) is type(other) and v == other for v in values):
                values.append(other)

    def __eq__(self, other: Any) -> bool:
        self._note(other)
        return False

    def __ne__(self, other: Any) -> bool:
        self._note(other)
        return True

    def __lt__(self, other: Any) -> bool:
        self._note(other)
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __bool__(self) -> bool:
        if self._notes is not None:
            self._notes.tested.add(self._name)
            self._notes.touched.add(self._name)
        return False

    def __call__(self, *args: Any, **kwargs: Any) -> Symbol:
        return self  # a probe nothing binds, called: still unknown

    def __hash__(self) -> int:
        return hash(self._name)

    def __deepcopy__(self, memo: dict) -> Symbol:
        return self

    def __repr__(self) -> str:
        return f"<{self._name}>"


class _Answering(dict):
    """The world's names, and a symbol for any other a pass imports (noted)."""

    def __init__(self, names: dict, notes: Notes) -> None:
        super().__init__(names)
        self.notes = notes

    def __missing__(self, name: str) -> Symbol:
        self.notes.unbound.append(name)
        return Symbol(name, self.notes)


@dataclass
class Found:
    """What the runs saw, as plain data."""

    values: dict[str, list] = field(default_factory=dict)
    tested: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)  # view attributes, in order
    inputs: list[str] = field(default_factory=list)  # world inputs read (fields, dotted)
    axes: list[str] = field(default_factory=list)  # the world's suggested axes read
    problems: dict[str, str] = field(default_factory=dict)  # pass -> why it stopped
    unbound: dict[str, str] = field(default_factory=dict)  # probe nothing binds -> a pass
    readers: dict[str, int] = field(default_factory=dict)  # input -> how many passes read it


def discover(
    world: World, base: Matrix, passes: list[tuple[str, Closure]], limits: Limits,
    runs: int = MAX_RUNS,
) -> Found:  # fmt: skip
    """Run each pass on symbols (at most `runs` times each), in one worker, and collect what
    it compared them with."""
    return start_discovery(world, base, passes, limits, runs).result()


def start_discovery(
    world: World, base: Matrix, passes: list[tuple[str, Closure]], limits: Limits,
    runs: int = MAX_RUNS,
):  # fmt: skip
    """`discover`, started in a worker: `.result()` waits for what it found."""

    work = functools.partial(_discover, world, base, passes, runs)
    return start(work, _found_data, lambda h, _: _decoded(h), limits)


def start_discoveries(
    world: World, jobs: list[tuple[Matrix, list[tuple[str, Closure]]]], limits: Limits, runs: int
):  # fmt: skip
    """Several discoveries ((base matrix, passes) each) in one worker, one after the other,
    each as `discover` makes it alone (the state of the runs starts again at each), under
    the limits of one (a caller whose batch overran runs each alone, under its own):
    `.result()` is their Founds in order."""
    work = functools.partial(_discover_each, world, jobs, runs)
    return start(work, _founds_data, lambda h, _: _decoded_each(h, len(jobs)), limits)


def _discover_each(
    world: World, jobs: list[tuple[Matrix, list[tuple[str, Closure]]]], runs: int
) -> list[Found]:
    return [_discover(world, base, passes, runs) for base, passes in jobs]


def _founds_data(founds: list[Found]) -> tuple[list, bytes]:
    return [found.__dict__ for found in founds], b""


def _decoded_each(header: Any, count: int) -> list[Found]:
    if type(header) is not list or len(header) != count:
        raise Malformed("not one inference's fields per discovery")
    return [_decoded(item) for item in header]


def _discover(world: World, base: Matrix, passes: list[tuple[str, Closure]], runs: int) -> Found:
    """In the worker: each pass run on symbols."""
    notes, found = Notes(), Found()
    fields = {k: v.tied(notes) if type(v) is Symbol else v for k, v in base.fields.items()}
    base = replace(base, fields=fields)
    for name, closure in passes:
        read, given = len(notes.read), len(found.inputs)
        _explore(world, base, name, closure, found, runs, notes)
        for input_name in {*notes.read[read:], *found.inputs[given:]}:
            found.readers[input_name] = found.readers.get(input_name, 0) + 1
        for probe in notes.unbound:
            found.unbound.setdefault(probe, name)
    found.values = {k: v[:MAX_VALUES] for k, v in notes.seen.items()}
    found.tested, found.read = sorted(notes.tested), list(dict.fromkeys(notes.read))
    return found


def _found_data(found: Found) -> tuple[dict, bytes]:
    return found.__dict__, b""


def _decoded(header: Any) -> Found:
    """The worker's answer, checked: names are strings, values plain scalars."""
    if type(header) is not dict or set(header) != set(Found().__dict__):
        raise Malformed("not the inference's fields")
    strings = all(
        type(header[k]) is list and all(type(s) is str for s in header[k])
        for k in ("tested", "read", "inputs", "axes")
    )
    values = header["values"]
    plain = type(values) is dict and all(
        type(k) is str and type(v) is list and all(type(x) in SCALAR_TYPES for x in v)
        for k, v in values.items()
    )
    problems, unbound = header["problems"], header["unbound"]
    named = all(
        type(d) is dict and all(type(k) is str and type(v) is str for k, v in d.items())
        for d in (problems, unbound)
    )
    readers = header["readers"]
    counted = type(readers) is dict and all(
        type(k) is str and type(v) is int for k, v in readers.items()
    )
    if not (strings and plain and named and counted):
        raise Malformed("the inference's answer is not plain names and values")
    return Found(**header)


def _explore(
    world: World, base: Matrix, name: str, closure: Closure, found: Found, limit: int,
    notes: Notes,
) -> None:  # fmt: skip
    """Run the pass on symbols, then again with each value it compared an input with, each
    truth it tested, and each other value of a suggested axis it read (breadth first)."""
    inputs: dict[str, Any] = {}  # world inputs the pass read, as symbols
    start = (0,) * len(base.axes)
    queue, seen, runs, nulled = [({}, start)], set(), 0, set()
    loaded = _Loaded(world, base, name, closure, notes)
    while queue and runs < limit:
        assign, cell = queue.pop(0)
        runs += 1
        notes.unknown.clear(), notes.touched.clear()
        try:
            matrix, bound, fn = loaded.for_run(inputs, assign)
            run_cell(fn, bound, matrix, cell)
        except Unevaluable as exc:
            if exc.missing is not None and exc.missing not in inputs:
                inputs[exc.missing] = Symbol(exc.missing, notes)
                found.inputs.append(exc.missing)
                queue.insert(0, (assign, cell))
                continue
            found.problems[name] = str(exc)
            return
        own = _assignment_key(assign)
        steps = _next_steps(matrix, bound.probe.read, assign, cell, found, nulled, notes)
        for step in steps:
            key = (own if step[0] is assign else _assignment_key(step[0]), step[1])
            if key not in seen:
                seen.add(key)
                queue.append(step)


def _assignment_key(assign: dict[str, Any]) -> frozenset[tuple[str, str]]:
    """An assignment as a run's key: its names with their values' reprs, in any order."""
    return frozenset((k, repr(v)) for k, v in assign.items())


def _next_steps(
    matrix: Matrix, read: int, assign: dict, cell: tuple, found: Found, nulled: set[str],
    notes: Notes,
):  # fmt: skip
    """The runs a run calls for: each value an input was compared with, a true value for
    each input tested for truth, null for each it read unknown and did not compare or test
    (`x is None` cannot be noted, and a symbol is never `None`; once per input, `nulled`),
    each other value of a suggested axis it read."""
    for i, axis in enumerate(matrix.axes):
        if read >> i & 1:
            if axis.name not in found.axes:
                found.axes.append(axis.name)
            for digit in range(len(axis.values)):
                yield assign, (*cell[:i], digit, *cell[i + 1 :])
    inputs = {*notes.read, *found.inputs}  # what a matrix can declare (not the probes)
    for attribute, values in list(notes.seen.items()):
        for value in values if attribute in inputs else ():
            yield {**assign, attribute: value}, cell
    for attribute in sorted(notes.tested & inputs):
        yield {**assign, attribute: True}, cell
    for attribute in sorted(notes.unknown - notes.touched - nulled):  # `is None`: not noted
        nulled.add(attribute)
        yield {**assign, attribute: None}, cell


class _Loaded:
    """The pass bound and compiled once per set of world inputs: a run's values for view
    attributes nothing declares go through `current`, which the view reads at each access
    (binding the world and compiling the pass for every run cost most of the time)."""

    def __init__(
        self, world: World, base: Matrix, name: str, closure: Closure, notes: Notes
    ) -> None:
        self.world, self.base, self.name, self.closure = world, base, name, closure
        self.notes = notes
        self.current: dict[str, Any] = {}
        self.made: dict[tuple, tuple] = {}

    def for_run(self, inputs: dict[str, Any], assign: dict[str, Any]) -> tuple:
        """(matrix, bound, the loaded pass) with `assign` in force."""
        read = set(self.notes.read)
        fields = {**inputs, **{k: v for k, v in assign.items() if k not in read}}
        self.current.clear()
        self.current.update({k: v for k, v in assign.items() if k in read})
        key = tuple(sorted((k, repr(v)) for k, v in fields.items()))
        if key not in self.made:
            matrix = replace(self.base, fields={**self.base.fields, **fields})
            bound = _with_symbols(bind(self.world, matrix), self.current, self.notes)
            bound = replace(bound, names=_Answering(bound.names, self.notes))
            self.made[key] = (matrix, bound, load_function(self.closure, bound, self.name))
        return self.made[key]


@dataclass(frozen=True)
class _Current(Spec):
    """A view attribute nothing declares: this run's value for it, else its symbol."""

    name: str
    current: dict
    notes: Notes

    def compile(self, ctx) -> Any:
        notes, current, name = self.notes, self.current, self.name
        symbol = Symbol(name, notes)

        def resolve(probe) -> Any:
            if name in current:
                return current[name]
            notes.unknown.add(name)
            return symbol

        return resolve


def _with_symbols(bound: Bound, current: dict[str, Any], notes: Notes) -> Bound:
    """`bound` whose view answers any attribute nothing declares with the run's value for
    it (`current`), else a symbol (noting in `notes`)."""

    def fallback(name: str) -> Spec:
        notes.read.append(name)
        return _Current(name, current, notes)

    return with_view_fallback(bound, fallback)


# --- the matrix file ---------------------------------------------------------------


def base_matrix(
    world: World, path: str, passes: list[str], outputs: tuple[str, ...], every: bool = False
) -> Matrix:
    """The matrix the runs use: the world's suggested axes (`every`: with every value its
    probes tell apart), nothing else declared."""
    axes = tuple(Axis(n, tuple((every and world.classes.get(n)) or v))
                 for n, v in world.suggested.items())  # fmt: skip
    target = Target(path, tuple(passes), outputs)
    fields = {} if world.facts.view_class else {o: Symbol(o) for o in outputs}  # outputs are inputs
    return Matrix("inferred", "the inferred matrix", target, world.name, axes, fields)


OTHER = "other"  # a value none of the code's literals names


def axis_values(values: list) -> list:
    """`null`, the literals, then one value none of them names (a NaN or an infinity is no
    literal a matrix holds: JSON reports could not show it)."""
    values = [v for v in values if type(v) is not float or math.isfinite(v)]
    if values and all(type(v) is bool for v in values):
        return [False, True]
    numbers = [v for v in values if type(v) in (int, float)]
    if numbers and len(numbers) == len(values):
        return [None, *values, _beyond(numbers)]
    other = OTHER
    while other in values:
        other += "_"
    return [None, *[v for v in values if v is not None], other]


def _beyond(numbers: list) -> int | float:
    """A finite number none of `numbers` equals: past the largest, else below the smallest
    (`1e20 + 1` is `1e20`)."""
    top, bottom = max(numbers), min(numbers)
    for candidate in (top + 1, math.nextafter(top, math.inf), bottom - 1):
        if math.isfinite(candidate) and candidate not in numbers:
            return candidate
    return math.nextafter(bottom, -math.inf)


def layout(
    world: World, found: Found, defaults: Defaults, outputs: tuple[str, ...], every=False
) -> tuple[dict[str, list], dict[str, tuple[Any, str]]]:
    """The axes ({name: values}) and fields ({name: (value, where it came from)}) of what
    the runs saw: an axis for each input compared with literals, each boolean tested, each
    of the world's suggested inputs read (`every`: with every value its probes tell apart);
    a field, at its declared default, for the rest (none for a default no matrix value
    can hold: the code's is read)."""
    inputs = list(dict.fromkeys([*found.read, *found.inputs]))  # view attributes, then others
    axes = {a: axis_values(found.values[a]) for a in inputs if found.values.get(a)}
    for attribute in found.read:
        if attribute not in axes and attribute in found.tested and _is_bool(defaults, attribute):
            axes[attribute] = [False, True]
    for suggested in found.axes:
        values = world.classes.get(suggested) if every else None
        axes[suggested] = list(values or world.suggested[suggested])
    fields = {}
    for attribute in [*found.read, *found.inputs, *outputs]:
        if attribute not in axes and attribute not in fields:
            fields[attribute] = _default(defaults, attribute)
    return axes, {k: v for k, v in fields.items() if v is not None}


def merged(first: Found, second: Found) -> Found:
    """What runs at two revisions saw together: every literal either compared with."""
    values = {k: list(v) for k, v in first.values.items()}
    for name, found in second.values.items():
        into = values.setdefault(name, [])
        into += [v for v in found if not any(type(v) is type(w) and v == w for w in into)]
    return Found(
        {k: v[: 2 * MAX_VALUES] for k, v in values.items()},
        _union(first.tested, second.tested), _union(first.read, second.read),
        _union(first.inputs, second.inputs), _union(first.axes, second.axes),
        {**second.problems, **first.problems}, {**second.unbound, **first.unbound},
        {k: max(first.readers.get(k, 0), second.readers.get(k, 0))
         for k in _union(list(first.readers), list(second.readers))},
    )  # fmt: skip


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _is_bool(defaults: Defaults, name: str) -> bool:
    declared = defaults.fields.get(name)
    return declared is not None and declared.literal and type(declared.value) is bool


def declared_default(defaults: Defaults, name: str) -> Default | None:
    """The literal default the code declares for an input: a field of the view's class, else
    one of the world's inputs (an environment variable); None when it declares none."""
    declared = defaults.fields.get(name) or defaults.inputs.get(name)
    return declared if declared is not None and declared.literal else None


def _default(defaults: Defaults, name: str) -> tuple[Any, str] | None:
    """A field's value and where it came from: the declared default, else null to set;
    None for a declared default no matrix value can hold (a list): the code's is read."""
    declared = declared_default(defaults, name)
    if declared is None:
        return None, "no literal default: set it"
    if type(declared.value) in SCALAR_TYPES:
        return declared.value, f"the default at {declared.where}"
    return None

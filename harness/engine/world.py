"""The world: the view of a cell, and the names the evaluated code may use.

A world answers, for the cell under evaluation, everything the target
function reads: `view.attention_backend`, `get_platform().is_sm100`,
`Backend.FULL`. Answers are *specs* compiled against a matrix into resolvers
(`probe -> value`). Every read of an axis goes through the `Probe`, which
records it: a pure function's outcome then holds for every cell that agrees
on the axes it read (see `evaluate.explore`).

Strictness: reading a view attribute or a stub attribute nobody declared
raises `Unbound`, a `BaseException` so the evaluated code's own
`except Exception` cannot swallow it. So does assigning to (or deleting) an
attribute of the view or of any object of the world: the harness compares
what a pass returns, so what it sets elsewhere would go unseen.

Nothing of the harness is reachable from what a world hands out: objects are
stand-ins of classes made per compiled world (`stand_in_class`, module
`world`), functions too, answering only a call (`world_function`), constant
classes are copies under SGLang's module name (`constants_class`); their
type, a new one and their `repr` are refused.
"""

from __future__ import annotations

import copy
import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from harness.closure.facts import PLAIN, WorldFacts
from harness.errors import HarnessError
from harness.matrix.model import SCALAR_TYPES, Matrix

Resolver = Callable[["Probe"], Any]


READ, ASSIGNED, DELETED, MADE = "read", "assigned", "deleted", "made"  # what the code did
INTERNAL_WRITE = "internal write"  # in `Probe.call` while the world writes a configuration
LOADING = "loading"  # in `Probe.call` while the project's modules load (not a call)
# in `Probe.call` for a call of an entry that is a method of the configuration's class
# (0.5.18's `ServerArgs.__post_init__`, whose `materialize_declarations` applies the stash
# itself, after which a pass writes through and `ServerArgs.__setattr__` refuses fields);
# from 0.5.19 the entry is `run_resolution_pipeline`, whose passes never write the fields
METHOD_ENTRY = "method entry"


def for_project(fix: str, project: str) -> str:
    """`fix` with each `{project}` the project's name (not str.format: a fix may quote
    braces of the evaluated code's)."""
    return fix.replace("{project}", project)


class Unbound(BaseException):
    """The evaluated code read something the matrix and the world do not define (`done`
    is READ), assigned to or deleted an attribute of the world's (ASSIGNED, DELETED), or
    made an object or a subclass of a class of the world (MADE)."""

    def __init__(self, what: str, fix: str, field: str | None = None, done: str = READ) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix
        self.field = field  # the matrix input that would answer it, if one would
        self.done = done


class Probe:
    """The cell under evaluation and a bitmask of the axes read so far."""

    __slots__ = ("call", "cell", "project", "read", "unbound", "values")

    def __init__(self, matrix: Matrix, project: str = PLAIN.display) -> None:
        self.values = [axis.values for axis in matrix.axes]
        self.project = project  # how a fix names the project: "SGLang"
        self.start(tuple(0 for _ in matrix.axes))

    def start(self, cell: tuple[int, ...]) -> None:
        """Begin a call on `cell`: no axis read, no refusal, and the world's state of
        the call (`call`: what the code set in its process, by the world's name) empty."""
        self.cell = cell
        self.read = 0
        self.unbound: Unbound | None = None  # the first refusal of this call
        self.call: dict[str, Any] = {}

    def refuse(self, what: str, fix: str, field: str | None = None, done: str = READ) -> Unbound:
        """The exception to raise for a read nothing answers (or a write, `done`),
        remembered here, out of the evaluated code's reach: catching it does not hide it
        (the runner checks). `{project}` in `fix` is the world's project."""
        exc = Unbound(what, for_project(fix, self.project), field, done)
        if self.unbound is None:
            self.unbound = exc
        return exc

    def axis(self, i: int) -> Any:
        self.read |= 1 << i
        return self.values[i][self.cell[i]]


# --- specs ---------------------------------------------------------------------


class Spec:
    """What a name or attribute means; compiled against a matrix into a resolver."""

    def compile(self, ctx: Context) -> Resolver:
        raise NotImplementedError


@dataclass(frozen=True)
class Const(Spec):
    value: Any

    def compile(self, ctx: Context) -> Resolver:
        value = self.value
        if isinstance(value, SCALAR_TYPES):
            return lambda probe: value
        return lambda probe: copy.deepcopy(value)


@dataclass(frozen=True)
class Native(Spec):
    """A Python object supplied by a world in code (a class, a stub logger)."""

    value: Any

    def compile(self, ctx: Context) -> Resolver:
        value = self.value
        return lambda probe: value


@dataclass(frozen=True)
class Function(Spec):
    """A function of the world (`register_post_process`): `answer`, called with the code's
    arguments, behind a `world_function` of its own per compiled world."""

    label: str
    answer: Callable[..., Any]

    def compile(self, ctx: Context) -> Resolver:
        function = world_function(self.label, self.answer, ctx.probe)
        return lambda probe: function


@dataclass(frozen=True)
class Constants(Native):
    """A class of constants (SGLang's `Backend`): `value` is the template whose public
    attributes it holds; each compiled world gets a class of its own, of `module`
    (`constants_class`), that refuses writes and what it does not hold."""

    module: str = "world"

    def compile(self, ctx: Context) -> Resolver:
        cls = constants_class(self.value, self.module, ctx.probe)
        return lambda probe: cls


@dataclass(frozen=True)
class Param(Spec):
    """A named input: the cell's value of that axis, else the field, else a default."""

    name: str
    default: Any = None
    required: bool = True
    reader: str = ""

    def compile(self, ctx: Context) -> Resolver:
        i = ctx.matrix.axis_index(self.name)
        if i is not None:
            return lambda probe: probe.axis(i)
        if self.name in ctx.matrix.fields:
            return Const(ctx.matrix.fields[self.name]).compile(ctx)
        if not self.required:
            return Const(self.default).compile(ctx)
        where = "`fields:` (one value)" + (" or `axes:`" if self.name.isidentifier() else "")
        return _raiser(
            self.name,
            self.reader or self.name,
            f"it is answered by the input {self.name}, which matrix {ctx.matrix.name} does not "
            f"define: add {self.name} under {where} in {ctx.matrix.edit_hint}",
        )


@dataclass(frozen=True)
class Map(Spec):
    """A value computed from a named input (e.g. a GPU's compute capability from `platform`)."""

    param: Param
    function: Callable[[Any], Any]

    def compile(self, ctx: Context) -> Resolver:
        get, function = self.param.compile(ctx), self.function
        return lambda probe: function(get(probe))


def Test(param: Param, predicate: Callable[[Any], bool]) -> Spec:
    """True when a named input satisfies `predicate` (e.g. the platform is an SM100 GPU)."""
    return Map(param, lambda value: bool(predicate(value)))


@dataclass(frozen=True)
class ListOf(Spec):
    item: Spec

    def compile(self, ctx: Context) -> Resolver:
        get = self.item.compile(ctx)
        return lambda probe: [get(probe)]


@dataclass(frozen=True)
class Call(Spec):
    """A callable taking any arguments and returning the spec's value."""

    returns: Spec
    label: str = ""  # how a refusal names the function: else the name it is bound to
    # SGLang's parameters, as a function that takes them (`no_parameters`: none): a call
    # binds its arguments there first, so what SGLang's refuses is Python's own TypeError
    parameters: Callable[..., None] | None = None
    refuses_arguments: bool = False  # SGLang's answer would depend on them: refused

    def compile(self, ctx: Context) -> Resolver:
        get, probe = self.returns.compile(ctx), ctx.probe
        label = self.label or "function"
        bare, refuses = self.parameters, self.refuses_arguments

        def answer(*args: Any, **kwargs: Any) -> Any:
            if bare is not None:
                bare(*args, **kwargs)
            elif refuses and (args or kwargs):
                raise probe.refuse(f"{label} called with arguments", ARGUMENTS_FIX)
            return get(probe)

        stub = world_function(self.label or "function", answer, probe)
        return lambda _: stub


ARGUMENTS_FIX = (
    "the world answers this function called without arguments, as {project}'s passes call "
    "it; with arguments {project}'s answer depends on them (a keyword replaces what its "
    "partial fixes), which no world models: call it without arguments, or bind the name "
    "under `bindings:` in the matrix (see docs/matrix-files.md)"
)


def no_parameters(label: str) -> Callable[[], None]:
    """A function of no parameter named as SGLang's (Python's messages name it): the
    `parameters` of a `Call` SGLang defines with none."""

    def bare() -> None:
        return None

    bare.__name__ = bare.__qualname__ = function_name(label)
    return bare


def named(spec: Spec, name: str) -> Spec:
    """`spec`, a function (`Call`) with no label of its own named `name`, as it is bound."""
    return replace(spec, label=name) if isinstance(spec, Call) and not spec.label else spec


@dataclass(frozen=True)
class Obj(Spec):
    """An object whose attributes are specs; reading any other attribute is Unbound."""

    label: str
    attrs: dict[str, Spec] = field(default_factory=dict)
    fallback: Callable[[str], Spec] | None = None
    kind: str = ""  # its class's name, as SGLang's object's (else the label)

    def compile(self, ctx: Context) -> Resolver:
        specs = self.attrs

        def fallback(name: str) -> Spec | None:  # each attribute compiled when first read
            spec = specs.get(name)
            if spec is not None:
                return named(spec, name)
            return None if self.fallback is None else self.fallback(name)

        obj = strict_object(self.label, {}, ctx, fallback, self.kind)
        return lambda probe: obj


@dataclass(frozen=True)
class Shared(Spec):
    """One object per compiled world under `key`, whatever reads it: `spec` compiled at
    the first read (SGLang's model config: `model_config.hf_config`, `.hf_text_config`
    and its own `get_text_config()` are the one object, as a text model's are; Python's
    `Enum`, whether imported by name or read off `enum`)."""

    key: str
    spec: Spec | None = None  # None: read from the object `key` names (made by then)

    def compile(self, ctx: Context) -> Resolver:
        found = ctx.shared.get(self.key)
        if found is None:
            if self.spec is None:
                raise RuntimeError(f"a bug in harness: {self.key} read before it is made")
            found = ctx.shared[self.key] = self.spec.compile(ctx)
        return found


@dataclass(frozen=True)
class AllOf(Spec):
    """True when every item is (read in order, stopping at the first false one)."""

    items: tuple[Spec, ...]

    def compile(self, ctx: Context) -> Resolver:
        getters = [item.compile(ctx) for item in self.items]
        return lambda probe: all(get(probe) for get in getters)


@dataclass(frozen=True)
class Refused(Spec):
    """A read nothing answers, with the reason and the fix."""

    what: str
    fix: str
    field: str | None = None

    def compile(self, ctx: Context) -> Resolver:
        return _raiser(self.field, self.what, self.fix)


def _raiser(field: str | None, what: str, fix: str) -> Resolver:
    def resolve(probe: Probe) -> Any:
        raise probe.refuse(what, fix, field)

    return resolve


def strict_object(
    label: str,
    attrs: dict[str, Resolver],
    ctx: Context,
    fallback: Callable[[str], Spec | None] | None = None,
    kind: str = "",
) -> Any:
    """A read-only object answering only the attributes it declares (`attrs`, and those
    `fallback` gives a spec for, compiled at the first read; None: it has none);
    assigning to or deleting any attribute is refused (on the probe, as a read nothing
    answers).

    Its state lives in this function's closure, not on the object, so evaluated
    code reading any attribute gets an answer or a refusal, never an internal; its
    class is a stand-in (`stand_in_class`): no harness class, no method to call."""
    probe = ctx.probe

    def missing(name: str) -> Resolver:
        if name.startswith("__"):
            raise AttributeError(name)
        spec = None if fallback is None else fallback(name)
        if spec is not None:
            resolve = attrs[name] = spec.compile(ctx)
            return resolve
        field = name if label == "view" else None
        raise probe.refuse(f"{label}.{name}", ctx.fix_for(label, name), field)

    def __getattribute__(self: Any, name: str) -> Any:
        resolve = attrs.get(name)
        if resolve is None:
            resolve = missing(name)
        return resolve(probe)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        raise probe.refuse(f"{label}.{name}", write_fix(label, name), done=ASSIGNED)

    def __delattr__(self: Any, name: str) -> None:
        raise probe.refuse(f"{label}.{name}", write_fix(label, name), done=DELETED)

    methods = {"__getattribute__": __getattribute__, "__setattr__": __setattr__,
               "__delattr__": __delattr__}  # fmt: skip
    return object.__new__(stand_in_class(label, methods, probe, name=kind))


# --- stand-ins -------------------------------------------------------------------

STAND_IN_MODULE = "world"  # the module a stand-in's class names: not the harness's
_STAND_INS: weakref.WeakSet[type] = weakref.WeakSet()
CONSTRUCT_FIX = (
    "the world stands in for {project}'s object, not for its class: evaluated code may "
    "not make one (see docs/security.md)"
)
REPR_FIX = (
    "{project}'s answer names its object's memory address, which no world can give: "
    "print or compare the object's fields instead"
)
TYPE_FIX = (
    "the world stands in for {project}'s objects, not for their classes: compare their "
    "attributes instead (see docs/security.md)"
)
CLASS_FIX = (
    "the world's stand-in is not {project}'s class, so what isinstance() or issubclass() "
    "against it gives is not {project}'s: bind what the code tests instead"
)


def stand_in_class(
    label: str,
    methods: dict[str, Any],
    probe: Probe | None,
    slots: tuple[str, ...] = (),
    name: str = "",
) -> type:
    """A class for the world's stand-ins: only the special `methods` given (no method
    evaluated code can call by a plain name), of module `world`, not the harness's.
    Making an instance (`type(x)()`), subclassing it and asking its `repr` (SGLang's
    names an address) are refused on `probe`, as is testing an object against one
    (`isinstance(x, stand_in)`: Python's TypeError would be no answer of SGLang's).
    `name` is the class's (as SGLang's
    object's, which Python's own messages show: `'ResolvedView' object is not
    iterable`), else the label. Instances are made by
    `object.__new__(cls)`; `type()` in evaluated code refuses them (`is_stand_in`)."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        raise refusal(probe, f"a new {label}", CONSTRUCT_FIX, MADE)

    def __init_subclass__(cls: type, **kwargs: Any) -> None:
        raise refusal(probe, f"a subclass of {label}", CONSTRUCT_FIX, MADE)

    def __repr__(self: Any) -> str:
        raise refusal(probe, f"repr({label})", REPR_FIX)

    def __instancecheck__(self: Any, obj: Any) -> bool:  # `isinstance(x, stand_in)`
        raise refusal(probe, f"isinstance() against {label}", CLASS_FIX)

    def __subclasscheck__(self: Any, cls: Any) -> bool:
        raise refusal(probe, f"issubclass() against {label}", CLASS_FIX)

    namespace = {"__new__": __new__, "__init_subclass__": __init_subclass__,
                 "__repr__": __repr__, "__instancecheck__": __instancecheck__,
                 "__subclasscheck__": __subclasscheck__, **methods}  # fmt: skip
    name = name or label
    namespace.update(__slots__=slots, __module__=STAND_IN_MODULE, __qualname__=name)
    cls = type(name, (), namespace)
    _STAND_INS.add(cls)
    return cls


def refusal(probe: Probe | None, what: str, fix: str, done: str = READ) -> BaseException:
    """What to raise for `what`: the probe's refusal (which the runner sees, caught or
    not), or a TypeError where no probe is at hand."""
    if probe is None:
        return TypeError(f"{what} is {done}: {for_project(fix, PLAIN.display)}")
    return probe.refuse(what, fix, done=done)


def constants_class(template: type, module: str, probe: Probe) -> type:
    """A copy of `template`'s public constants (SGLang's `Backend`) as a class of
    `module`: a real class (`isinstance`, its `repr` as SGLang's), whose metaclass, a
    stand-in, refuses writes, other attributes, instances and subclasses on `probe`."""
    name = template.__name__
    constants = {k: v for k, v in vars(template).items() if not k.startswith("_")}

    def __getattr__(cls: type, attr: str) -> Any:  # only what the class lacks
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise probe.refuse(f"{name}.{attr}", _constant_fix(name, attr))

    def __setattr__(cls: type, attr: str, value: Any) -> None:
        raise probe.refuse(f"{name}.{attr}", write_fix(name, attr), done=ASSIGNED)

    def __delattr__(cls: type, attr: str) -> None:
        raise probe.refuse(f"{name}.{attr}", write_fix(name, attr), done=DELETED)

    def __call__(cls: type, *args: Any, **kwargs: Any) -> Any:
        raise probe.refuse(f"a new {name}", CONSTRUCT_FIX, done=MADE)

    def __new__(meta: type, *args: Any, **kwargs: Any) -> Any:  # `class X(Backend)`
        raise probe.refuse(f"a subclass of {name}", CONSTRUCT_FIX, done=MADE)

    methods = {"__getattr__": __getattr__, "__setattr__": __setattr__,
               "__delattr__": __delattr__, "__call__": __call__, "__new__": __new__}  # fmt: skip
    methods.update(__module__=STAND_IN_MODULE, __qualname__="type")
    meta = type("type", (type,), methods)
    _STAND_INS.add(meta)
    body = {**constants, "__module__": module, "__qualname__": name, "__doc__": template.__doc__}
    return type.__new__(meta, name, (), body)


def _constant_fix(name: str, attr: str) -> str:
    return (
        f"the world's {name} has no constant {attr}: bind {name} under `bindings:` in the "
        "matrix (see docs/matrix-files.md)"
    )


def is_stand_in(obj: Any) -> bool:
    """Whether `obj` is one of the world's stand-ins, or of the harness's own types: what
    `type()` in evaluated code refuses."""
    kind = type(obj)
    if kind in _STAND_INS:
        return True
    module = type.__dict__["__module__"].__get__(kind)
    return type(module) is str and (module == "harness" or module.startswith("harness."))


FUNCTION_FIX = (
    "the world stands in for what {project}'s function returns, not for the function "
    "({project}'s may be an lru_cache wrapper, a builtin, ...): call it instead"
)


def world_function(
    label: str, answer: Callable[..., Any], probe: Probe | None = None
) -> Callable[..., Any]:
    """A stand-in for one of SGLang's functions (or a builtin the sandbox guards): calling
    it calls `answer`. Anything else evaluated code could ask of it is refused on `probe`
    (a TypeError without one): its type, `repr`, `str`, `format`, an attribute read
    (`hasattr(f, "cache_info")`), written or deleted. SGLang's functions differ from any
    stand-in in each of these (many are `lru_cache` wrappers, with `cache_info` and a
    `repr` of their own), so code could otherwise tell the two apart, without a
    condition for a blind spot to name; and nothing set on one can outlive a cell, as
    nothing would in SGLang's process, which resolves one configuration. Python's own
    lookups of special names (`isinstance` asks `__class__`) find none, as on every
    stand-in. Every one is of one class (a bind makes dozens): what it answers lives in
    slots no attribute read reaches (each special name is refused, as is `type()`)."""
    function = object.__new__(_FUNCTION)
    _SLOTS["answer"].__set__(function, answer)
    _SLOTS["name"].__set__(function, function_name(label))
    _SLOTS["probe"].__set__(function, probe)
    return function


def _function_class() -> tuple[type, dict[str, Any]]:
    """The class of the world's functions and its slots' descriptors, by field."""
    slots = {"answer": "answer", "name": "name", "probe": "probe"}
    found: dict[str, Any] = {}
    answer_of: Callable[[Any], Any]  # the answer slot's reader, once the class is made

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        return answer_of(self)(*args, **kwargs)

    def refused(self: Any, attr: str | None, fix: str, done: str = READ) -> BaseException:
        """The refusal of `attr` of this function (None: of its repr), on its probe."""
        name = found["name"].__get__(self)
        what = f"repr({name})" if attr is None else f"{name}.{attr}"
        return refusal(found["probe"].__get__(self), what, fix, done)

    def __getattribute__(self: Any, attr: str) -> Any:
        if attr == "__mro_entries__":  # `class X(print)`: a subclass of it
            raise refused(self, "__mro_entries__ (a subclass)", CONSTRUCT_FIX, MADE)
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise refused(self, attr, FUNCTION_FIX)

    def __setattr__(self: Any, attr: str, value: Any) -> None:
        raise refused(self, attr, FUNCTION_FIX, ASSIGNED)

    def __delattr__(self: Any, attr: str) -> None:
        raise refused(self, attr, FUNCTION_FIX, DELETED)

    def __repr__(self: Any) -> str:
        raise refused(self, None, REPR_FIX)

    def tested(check: str) -> Callable[[Any, Any], bool]:  # `isinstance(x, f)`, ...
        def test(self: Any, other: Any) -> bool:
            name = found["name"].__get__(self)
            raise refusal(found["probe"].__get__(self), f"{check}() against {name}", CLASS_FIX)

        return test

    methods = {"__call__": __call__, "__getattribute__": __getattribute__,
               "__setattr__": __setattr__, "__delattr__": __delattr__,
               "__repr__": __repr__, "__instancecheck__": tested("isinstance"),
               "__subclasscheck__": tested("issubclass")}  # fmt: skip
    cls = stand_in_class("function", methods, None, tuple(slots.values()))
    found.update({field: vars(cls)[slot] for field, slot in slots.items()})
    answer_of = found["answer"].__get__
    return cls, found


_FUNCTION, _SLOTS = _function_class()


def function_name(label: str) -> str:
    """The name SGLang's function has, from how the world shows a call of it:
    `get_platform()` and `envs.X.get()` are `get_platform` and `get`, so its `repr`
    is SGLang's but for the address."""
    name = label.removesuffix("()").rsplit(".", 1)[-1]
    return name if name.isidentifier() else "call"


def write_fix(label: str, name: str) -> str:
    """The fix for code that assigns to (or deletes) `label.name`, an object of the world:
    what it sets there is not what harness compares."""
    if label == "view":
        return (
            f'harness compares what the function returns; return {{"{name}": ...}} instead '
            "(see docs/your-project.md)"
        )
    return (
        f"harness compares what the function returns, and {label} is the world's: return "
        "the fields it sets as a dict instead (see docs/your-project.md)"
    )


# --- worlds --------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    """A family of targets: the view's extra attributes and the names it binds.

    Axes and fields become view attributes of the same name, except those in
    `consumed` (inputs the world answers through stubs, such as `platform`).
    """

    name: str
    names: dict[str, Spec] = field(default_factory=dict)
    view_attrs: dict[str, Spec] = field(default_factory=dict)
    consumed: frozenset[str] = frozenset()
    validate: Callable[[Matrix], None] | None = None  # refuses a matrix iff one of its values
    suggested: dict[str, tuple] = field(default_factory=dict)  # inputs it reads: a first axis
    classes: dict[str, tuple] = field(default_factory=dict)  # every value its probes tell apart
    view_writes: bool = False  # an attribute assigned to the view is declared (not refused)
    facts: WorldFacts = PLAIN  # how its project's code is laid out (read by closure/)
    # view attributes answered as the project's resolution leaves them (what a pass reads),
    # with the inputs that answer them: an entry runs that resolution, so it reads the
    # attribute's input there (the matrix's, the default), and those inputs mean nothing
    resolved: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # view attributes that are methods of the configuration's class: an entry runs the
    # class's own (SGLang's `get_model_config()` keeps what it makes in
    # `self.model_config`, which later code reads), so the world answers them for passes
    methods: frozenset[str] = frozenset()
    # for an entry, the names it answers from what the configuration's class declares
    # (`harness.closure.defaults.Defaults`), once that is read, given the class as the
    # entry reads it (`configuration_class`): SGLang's declaration check
    from_class: Callable[[Context, Any, Any], dict[str, Any]] | None = None
    # for an entry: attributes the configuration lacks until its code sets them (reading
    # one first is Python's AttributeError, not an input) ...
    unset: frozenset[str] = frozenset()
    # ... and an entry function's outcome from what it wrote (`project(probe, written)`),
    # where the project's resolution keeps declarations apart from the fields (SGLang's
    # stash); an entry method's (`ServerArgs.__post_init__`) is the fields it leaves
    project: Callable[[Probe, dict[str, Any]], dict[str, Any]] | None = None
    # ... and the attribute that, once an entry method sets it, makes the configuration's
    # own `__setattr__` refuse its fields (SGLang's after `materialize_declarations`)
    frozen_by: str | None = None
    # ... and the attribute an entry keeps a snapshot of the fields it was handed in, each
    # field's inputs counted where it is looked up (`harness.engine.snapshots`; SGLang's
    # `_raw_input`)
    snapshot: str | None = None

    def view_attrs_for(self, matrix: Matrix) -> dict[str, Spec]:
        """The view attributes the world answers for `matrix`'s target."""
        if not matrix.target.entry:
            return self.view_attrs
        mine = {*self.resolved, *self.methods}
        return {k: v for k, v in self.view_attrs.items() if k not in mine}

    def __reduce__(self) -> tuple:
        """Pickled by name (a worker's job): the registered world of that name."""
        return _registered_world, (self.name,)


_REGISTERED: dict[str, World] = {}  # filled by harness.engine.worlds


def register_world(world: World) -> World:
    """Make `world` the one a pickled world of its name stands for (in a worker, which
    imports harness.engine.worlds before it reads a job)."""
    _REGISTERED[world.name] = world
    return world


def _registered_world(name: str) -> World:
    return _REGISTERED[name]


class Context:
    """A world compiled against one matrix: the probe, the view, the bound names."""

    def __init__(self, world: World, matrix: Matrix) -> None:
        self.world, self.matrix = world, matrix
        self.probe = Probe(matrix, world.facts.display)
        self.shared: dict[str, Any] = {}  # what several of the world's specs make once

    def fix_for(self, label: str, name: str) -> str:
        source = self.matrix.edit_hint
        if label == "view":
            return (
                f"matrix {self.matrix.name} defines no axis or field {name}: add it under "
                f"`fields:` (one value) or `axes:` (several) in {source}"
            )
        return (
            f"the {self.world.name} world does not model {label}.{name}: bind the name "
            f"under `bindings:` in {source} (see docs/matrix-files.md)"
        )


@dataclass
class Bound:
    """A compiled world: the view object and the name bindings, sharing one probe."""

    probe: Probe
    view: Any = field(repr=False)  # a strict_object (whose repr is refused)
    names: dict[str, Any] = field(repr=False)
    ctx: Context | None = field(default=None, repr=False)
    view_specs: dict[str, Spec] = field(default_factory=dict, repr=False)
    guards: dict[str, Callable[[], Any]] = field(default_factory=dict, repr=False)
    recipe: tuple | None = field(default=None, repr=False, compare=False)  # how to make it again

    def __reduce__(self) -> tuple:
        """Pickled as the calls that made it (a worker's job), made again by the worker
        when it is used (see `Deferred`), with its own probe."""
        if self.recipe is None:
            raise TypeError("this Bound was not made by bind or with_defaults: it cannot cross")
        return Deferred, (self.recipe,)


class Deferred:
    """A Bound as a worker's job carries it: the calls that make it, not made yet. A job
    first gives it the code's defaults (`with_defaults`), which binds the world again when
    they name inputs the matrix leaves out: made then, the world is bound once, not twice
    (bound a few hundred times per split diff)."""

    def __init__(self, recipe: tuple) -> None:
        self.recipe = recipe

    def made(self) -> Bound:
        maker, args = self.recipe
        return maker(*args)

    def with_defaults(self, defaults: Any) -> Bound:
        maker, args = self.recipe
        if maker is not bind or defaults.empty or not defaults.inputs:
            return with_defaults(self.made(), defaults)
        world, matrix = args
        _check_matrix(world, matrix)  # what bind(world, matrix) refuses, refused the same
        bound = bind(world, with_input_fields(matrix, defaults))
        return _with_fallback(bound, defaults, (with_defaults, (self, defaults)))


def bind(world: World, matrix: Matrix) -> Bound:
    """Compile `world` (plus the matrix's own fields and bindings) against `matrix`."""
    _check_matrix(world, matrix)
    ctx = Context(world, matrix)
    view_specs: dict[str, Spec] = dict(world.view_attrs_for(matrix))  # the matrix's inputs win
    for axis in matrix.axes:
        if axis.name not in world.consumed:
            view_specs[axis.name] = Param(axis.name)
    for name, value in matrix.fields.items():
        if name not in world.consumed and "." not in name:  # dotted: a probe's answer
            view_specs[name] = Const(value)
    view = Obj("view", view_specs, kind=world.facts.view_type).compile(ctx)(ctx.probe)
    names = {name: named(spec, name).compile(ctx)(ctx.probe) for name, spec in world.names.items()}
    for name, raw in matrix.bindings.items():
        spec = parse_binding(raw, f"{matrix.source}: bindings.{name}", name)
        names[name] = spec.compile(ctx)(ctx.probe)
    if matrix.target.entry and world.facts.class_name is not None:
        names[world.facts.class_name] = configuration_class(ctx, None)
    guards = {}
    for name, raw in matrix.target.guards:
        resolve = parse_binding(raw, f"{matrix.source}: target.guards.{name}", name).compile(ctx)
        guards[name] = functools.partial(resolve, ctx.probe)
    return Bound(ctx.probe, view, names, ctx, view_specs, guards, (bind, (world, matrix)))


def _check_matrix(world: World, matrix: Matrix) -> None:
    if world.validate is not None:
        world.validate(matrix)
    _check_outputs(world, matrix)
    _check_entry_inputs(world, matrix)


def _check_entry_inputs(world: World, matrix: Matrix) -> None:
    """An entry reads no input that answers a resolved attribute (`World.resolved`): an
    axis of one would make cells that differ in nothing the code reads."""
    if not matrix.target.entry:
        return
    for attribute, inputs in world.resolved.items():
        for name in inputs:
            if name in matrix.fields or matrix.axis_index(name) is not None:
                raise HarnessError(
                    f"{matrix.source}: {name} answers view.{attribute} as the "
                    f"{world.facts.display} resolution leaves it, for a pass; an entry runs "
                    f"that resolution from {attribute}'s input: remove {name}, and set the "
                    f"inputs {world.facts.display} reads instead"
                )


def _check_outputs(world: World, matrix: Matrix) -> None:
    """Each output is an input too (the value a cell keeps when nothing declares it): an
    axis, a field, or, in a world whose view stands for a class, the class's default."""
    if world.facts.view_class is not None:
        return
    for output in matrix.target.outputs:
        if output not in matrix.fields and matrix.axis_index(output) is None:
            raise HarnessError(
                f"{matrix.source}: target.output: {output} must also be an axis or a field: "
                "it is the input value a cell keeps when the function declares nothing (the "
                f"{world.name} world has no class whose defaults could give it)"
            )


def with_defaults(bound: Bound | Deferred, defaults: Any) -> Bound:
    """`bound` with a view that also answers the fields its class declares
    (`harness.closure.defaults.Defaults`) when neither the matrix nor the world does: a
    literal default is the answer; a field declared without one is refused, saying why.
    An output field the class does not declare (yet, or any more) is null."""
    if isinstance(bound, Deferred):
        return bound.with_defaults(defaults)
    if defaults.empty or bound.ctx is None:
        return bound
    original = bound
    if defaults.inputs:  # the world's inputs the matrix leaves out take the code's defaults
        bound = _with_input_defaults(bound, defaults)
    return _with_fallback(bound, defaults, (with_defaults, (original, defaults)))


def bind_with_defaults(world: World, matrix: Matrix, defaults: Any) -> Bound:
    """`with_defaults(bind(world, matrix), defaults)`, the world bound once."""
    return Deferred((bind, (world, matrix))).with_defaults(defaults)


def _with_fallback(bound: Bound, defaults: Any, recipe: tuple) -> Bound:
    """`bound` whose view answers the fields `defaults` declare (see `with_defaults`)."""
    ctx, fields = bound.ctx, defaults.fields
    outputs = ctx.matrix.target.outputs

    def fallback(name: str) -> Spec:
        declared = fields.get(name)
        if declared is None and name in outputs:
            return Const(None)
        if declared is None:
            return Refused(f"view.{name}", ctx.fix_for("view", name), name)
        if declared.literal:
            return Const(declared.value)
        fix = (
            f"{defaults.source} declares {name}, but {declared.refusal}, which harness "
            f"does not run: declare {name} under `fields:` or `axes:` in "
            f"{ctx.matrix.edit_hint}"
        )
        return Refused(f"view.{name}", fix, name)

    made = with_view_fallback(bound, fallback)
    names, name, world = made.names, ctx.world.facts.class_name, ctx.world
    if ctx.matrix.target.entry and name is not None:
        names = {**names, name: configuration_class(ctx, defaults)}
    if ctx.matrix.target.entry and world.from_class is not None:
        names = {**names, **world.from_class(ctx, defaults, names.get(name))}
    return replace(made, names=names, recipe=recipe)


def configuration_class(ctx: Context, defaults: Any | None) -> Any:
    """The configuration's class as an entry reads it (`ServerArgs.page_size`, what
    `type(server_args)` gives): an object whose attributes are the defaults the class
    declares (`harness.closure.defaults`), where those are its class attributes (a
    dataclass without slots whose module changes it nowhere else) and immutable (a list
    read twice would be one object there). Anything else is refused: another attribute
    (a method), a special one (so `isinstance`/`issubclass` with it are refused), making
    one, subclassing it, an item. `defaults` None: not read (yet), all refused."""
    name, probe = ctx.world.facts.class_name, ctx.probe
    fields = {} if defaults is None else defaults.fields
    source = name if defaults is None else defaults.source
    plain = defaults is not None and defaults.class_attributes

    def refuse(what: str, why: str) -> BaseException:
        fix = (f"{why}; harness answers {name}.X with the literal defaults the class declares "
               "and runs none of its other code")  # fmt: skip
        return probe.refuse(what, fix)

    def __getattribute__(self: Any, attr: str) -> Any:
        declared = None if attr.startswith("__") else fields.get(attr)
        if plain and declared is not None and declared.literal and _immutable(declared.value):
            return declared.value
        if attr.startswith("__"):
            why = f"{name} is the world's stand-in for the class: its special attributes are not"
        elif declared is not None and declared.literal:
            why = f"{source} is not a plain dataclass, or {attr} is not an immutable value"
        elif declared is not None:
            why = f"{source} declares {attr}, but {declared.refusal}"
        else:
            why = f"{source} declares no field {attr}"
        raise refuse(f"{name}.{attr}", why)

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise refuse(f"a new {name}", f"the entry is handed the cell's {name}")

    def __getitem__(self: Any, key: Any) -> Any:
        raise refuse(f"{name}[...]", f"{name} is the world's")

    def __setattr__(self: Any, attr: str, value: Any) -> None:
        raise refuse(f"{name}.{attr} (assigned)", f"{name} is the world's")

    def __delattr__(self: Any, attr: str) -> None:
        raise refuse(f"{name}.{attr} (deleted)", f"{name} is the world's")

    methods = {"__getattribute__": __getattribute__, "__call__": __call__,
               "__getitem__": __getitem__, "__setattr__": __setattr__,
               "__delattr__": __delattr__}  # fmt: skip
    return object.__new__(stand_in_class(name, methods, probe, (), "type"))


def _immutable(value: Any) -> bool:
    if type(value) in (tuple, frozenset):
        return all(_immutable(item) for item in value)
    return isinstance(value, SCALAR_TYPES)


def with_view_fallback(bound: Bound, fallback: Callable[[str], Spec]) -> Bound:
    """`bound` whose view answers an attribute nothing else does with `fallback(name)`."""
    kind = bound.ctx.world.facts.view_type
    view = Obj("view", bound.view_specs, fallback, kind).compile(bound.ctx)(bound.probe)
    return replace(bound, view=view, recipe=None)


def _with_input_defaults(bound: Bound, defaults: Any) -> Bound:
    """`bound` made again from a matrix whose fields also hold the code's defaults for the
    world's inputs it does not declare (`envs.X` reads the field X), the matrix's own
    declarations first."""
    ctx = bound.ctx  # its own probe: whoever runs the code uses this bound
    return bind(ctx.world, with_input_fields(ctx.matrix, defaults))


def with_input_fields(matrix: Matrix, defaults: Any) -> Matrix:
    """`matrix` whose fields also hold the code's defaults for the world's inputs it does
    not declare, its own declarations first."""
    given = {*matrix.fields, *matrix.axis_names}
    extra = {n: d.value for n, d in defaults.inputs.items() if n not in given}
    return replace(matrix, fields={**extra, **matrix.fields})


# --- declarative bindings --------------------------------------------------------

BINDING_FORMS = "value, call, object, axis, axis_in, all"


def parse_binding(raw: Any, where: str, label: str) -> Spec:
    """A binding written in a matrix file (see docs/matrix-files.md) as a spec."""
    if not isinstance(raw, dict):
        return Const(raw)
    if len(raw) != 1:
        raise HarnessError(f"{where}: a binding mapping takes exactly one of {BINDING_FORMS}")
    ((form, arg),) = raw.items()
    if form == "value":
        return Const(arg)
    if form == "call":
        return Call(parse_binding(arg, f"{where}.call", label), label=f"{label}()")
    if form == "object":
        return _parse_object(arg, where, label)
    if form == "axis":
        return Param(_str(arg, f"{where}.axis"), reader=label)
    if form == "axis_in":
        return _parse_axis_in(arg, where, label)
    if form == "all":
        if not isinstance(arg, list) or not arg:
            raise HarnessError(f"{where}.all: expected a list of bindings, all of them true")
        items = [parse_binding(a, f"{where}.all[{n}]", label) for n, a in enumerate(arg)]
        return AllOf(tuple(items))
    raise HarnessError(f"{where}: unknown binding form {form!r} (use one of {BINDING_FORMS})")


def _parse_object(arg: Any, where: str, label: str) -> Spec:
    if not isinstance(arg, dict):
        raise HarnessError(f"{where}.object: expected a mapping of attribute names to bindings")
    attrs = {k: parse_binding(v, f"{where}.object.{k}", f"{label}.{k}") for k, v in arg.items()}
    return Obj(label, attrs)


def _parse_axis_in(arg: Any, where: str, label: str) -> Spec:
    if not (isinstance(arg, dict) and len(arg) == 1):
        raise HarnessError(
            f"{where}.axis_in: expected {{AXIS: [values]}}, e.g. {{platform: [sm100]}}"
        )
    ((name, values),) = arg.items()
    if not isinstance(values, list):
        values = [values]
    allowed = frozenset((type(v), v) for v in values)
    return Test(
        Param(_str(name, f"{where}.axis_in"), reader=label), lambda v: (type(v), v) in allowed
    )


def _str(arg: Any, where: str) -> str:
    if not isinstance(arg, str):
        raise HarnessError(f"{where}: expected an axis name")
    return arg

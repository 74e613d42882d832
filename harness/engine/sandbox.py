"""Loading extracted code: compiled alone, in a fresh namespace, with the world's names.

The namespace holds only the world's bindings for the closure's imported
names and the builtins the policy allows (`harness.engine.policy`, checked
before anything is compiled), and `__name__`: the file's dotted module name
as the project imports it (`sglang.srt.server_args`), never the harness's;
`import` inside the code answers from the world too. A pipeline's passes
are loaded one by one and chained over an overlaid view.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import copy
import functools
from collections.abc import Callable, Collection
from types import CodeType, FunctionType, MethodType, TracebackType
from typing import Any

from harness.closure.extract import Closure, Pipeline
from harness.closure.modules import module_name
from harness.closure.resolve import METHOD_PREFIX
from harness.engine.branches import Sites
from harness.engine.deferral import (
    Deferring,
    deferred_import,
    deferred_reasons,
    deferring_space,
    failed_space,
    self_contained,
    withheld_in,
    withholding,
)
from harness.engine.own_names import READER, name_reader, rewritten
from harness.engine.policy import (
    ALLOWED_BUILTINS,
    POLICY_FIX,
    Withheld,
    check_closure,
    forbidden_attribute,
)
from harness.engine.purity import MUTATORS
from harness.engine.snapshots import Snapshot, escaping, snapshot_builtins, snapshot_rewritten
from harness.engine.world import (
    ASSIGNED,
    DELETED,
    INTERNAL_WRITE,
    LOADING,
    METHOD_ENTRY,
    READ,
    TYPE_FIX,
    Bound,
    Probe,
    Unbound,
    is_stand_in,
    refusal,
    stand_in_class,
    world_function,
    write_fix,
)
from harness.errors import Unevaluable

Branches = tuple[Sites, dict[str, Any]]  # the sites, and the recorder's functions by name


def code_name(path: str, label: str) -> str:
    """The file name evaluated code is compiled under: the path and the revision."""
    return f"{path}@{label}"


def target_loader(
    closure: Closure | Pipeline, bound: Bound, label: str, branches: Branches | None = None
) -> Callable[[], Callable[..., Any]]:
    """What makes the callable a cell runs (the target function, or the passes chained;
    with `branches`, a Sites and the recorder's names, every function reports its sites),
    compiled once: each call of the answer runs the files' bodies afresh (see
    `function_loader`) and returns a new callable, as a fresh process would give."""
    extra, rewrite = (branches[1], branches[0].rewrite) if branches else (None, None)

    def loader(c: Closure) -> Callable[[], Callable[..., Any]]:
        return function_loader(c, bound, label, extra, rewrite=rewrite)

    if not isinstance(closure, Pipeline):
        return loader(closure)
    passes = [(loader(c), bound.guards.get(name)) for name, c in closure.passes if c is not None]
    chained = chain_maker(bound.probe, view_type(bound))
    return lambda: chained([guarded(load(), guard) for load, guard in passes])


def guarded(fn: Callable[..., Any], guard: Callable[[], Any] | None) -> Callable[..., Any]:
    """`fn`, run only on cells where the matrix's guard for it holds (`target.guards`:
    what stands in for the `if` SGLang's handler runs the pass under)."""
    if guard is None:
        return fn

    def run(view: Any) -> Any:
        return fn(view) if guard() else {}

    run.__name__ = fn.__name__
    return run


def chain(
    passes: list[Callable[..., Any]], probe: Probe | None = None, kind: str = "view"
) -> Callable[..., Any]:
    """Run passes in order, each seeing the view with the earlier declarations overlaid
    (an overlay of class `kind`: see `overlay_maker`; what it refuses is refused on
    `probe`)."""
    return chain_maker(probe, kind)(passes)


def chain_maker(
    probe: Probe | None = None, kind: str = "view"
) -> Callable[[list[Callable[..., Any]]], Callable[..., Any]]:
    """`chain` with its overlay's class made once: `make(passes)` chains them."""
    overlay = overlay_maker("view", probe, name=kind)

    def make(passes: list[Callable[..., Any]]) -> Callable[..., Any]:
        def pipeline(view: Any) -> dict[str, Any]:
            declared: dict[str, Any] = {}
            seen = overlay(view, declared)  # reads `declared` as it grows: one for every pass
            for fn in passes:
                result = fn(seen)
                if type(result) is not dict:
                    kind = type(result).__name__
                    raise TypeError(f"{fn.__name__} returned {kind}, not a dict of declared fields")
                declared.update(result)
            return dict(declared)

        return pipeline

    return make


Reader = Callable[[Any, str], Any]


def overlay_maker(
    label: str,
    probe: Probe | None,
    answer: Callable[[Any, Any], Any] | None = None,
    otherwise: Reader | None = None,
    write: Callable[[Any, str, str], BaseException] | None = None,
    name: str = "",
    record: bool = False,
    guard: Callable[[dict[str, Any], str], None] | None = None,
    unhashable: str = "",
) -> Callable[[Any, dict[str, Any]], Any]:
    """`make(inner, declared)`: an object answering a name `declared` holds (through
    `answer(obj, value)`, if given; never one starting with `__`), else `otherwise(inner,
    name)` (by default, the inner object's attribute). A write goes into `declared` with
    `record` (a name not starting with `__`; `guard(declared, name)` first, which may
    raise), else to `inner`, or raises `write(inner, name, done)`. With `unhashable`
    (why), hashing one is refused: what it stands for is a dataclass Python hashes not.

    Its class is a stand-in (`harness.engine.world.stand_in_class`), made once per
    maker: only special methods, state in slots read through their descriptors kept
    here, so evaluated code can neither read the state nor call a method with a name
    of its choosing."""
    read = getattr if otherwise is None else otherwise

    def __getattribute__(self: Any, name: str) -> Any:
        declared = get_declared(self)
        if name in declared and not name.startswith("__"):
            value = declared[name]
            return value if answer is None else answer(self, value)
        return read(get_inner(self), name)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if record and not name.startswith("__"):
            if guard is not None:
                guard(get_declared(self), name)
            get_declared(self)[name] = value
        elif write is not None:
            raise write(get_inner(self), name, ASSIGNED)
        else:
            setattr(get_inner(self), name, value)

    def __delattr__(self: Any, name: str) -> None:
        if write is not None:
            raise write(get_inner(self), name, DELETED)
        delattr(get_inner(self), name)

    methods = {"__getattribute__": __getattribute__, "__setattr__": __setattr__,
               "__delattr__": __delattr__}  # fmt: skip
    if unhashable:

        def __hash__(self: Any) -> int:
            raise refusal(probe, f"hash() of {name or label}", unhashable)

        methods["__hash__"] = __hash__
    cls = stand_in_class(label, methods, probe, ("_inner", "_declared"), name)
    inner, declared = cls.__dict__["_inner"], cls.__dict__["_declared"]
    get_inner, get_declared = inner.__get__, declared.__get__

    def make(value: Any, names: dict[str, Any]) -> Any:
        obj = object.__new__(cls)
        inner.__set__(obj, value)
        declared.__set__(obj, names)
        return obj

    make.made = cls  # what `type()` of what it makes is (see `configuration_type`)
    make.inner = get_inner  # what one it made reads through (SGLang's `record_of`)
    return make


def load_function(
    closure: Closure,
    bound: Bound,
    label: str,
    extra: dict[str, Any] | None = None,
    nodes: tuple[ast.stmt, ...] | None = None,
    rewrite: Callable[[str, tuple[ast.stmt, ...]], tuple[ast.stmt, ...]] | None = None,
) -> Callable[..., Any]:
    """Compile the closure, file by file, each in a namespace of its own (as Python keeps
    modules), and return the target function object. `nodes` replaces the target
    file's statements (an instrumented copy); `extra` adds names to its namespace (to
    every file's, with `rewrite`, which rewrites each file's statements)."""
    return function_loader(closure, bound, label, extra, nodes, rewrite)()


def function_loader(
    closure: Closure,
    bound: Bound,
    label: str,
    extra: dict[str, Any] | None = None,
    nodes: tuple[ast.stmt, ...] | None = None,
    rewrite: Callable[[str, tuple[ast.stmt, ...]], tuple[ast.stmt, ...]] | None = None,
) -> Callable[[], Callable[..., Any]]:
    """`load_function`'s work split at the seam a fresh process has: the policy check,
    the rewrite and the compilation happen here, once; each call of the answer runs every
    file's body again in new namespaces (new module-level state, the world's mutable
    plain data copied anew: `fresh_names`) and returns that copy's target function."""
    withheld = check_closure(closure)
    return _Loader(closure, bound, label, extra or {}, nodes, rewrite, withheld)


class _Loader:
    """A closure compiled once, with what every load shares: the code objects, the
    builtins (stateless but for `import`, which reads `spaces`, `importers` and `world`,
    refilled by each load), the module and method overlays' classes."""

    def __init__(self, closure: Closure, bound: Bound, label: str, extra: dict[str, Any],
                 nodes: tuple[ast.stmt, ...] | None, rewrite: Any,
                 withheld: Withheld | None = None) -> None:  # fmt: skip
        self.closure, self.bound = closure, bound
        self.order = order = load_order(closure)
        owner = _view_class_name(bound)
        snapshot = None if bound.ctx is None else bound.ctx.world.snapshot
        self.codes = [_compiled(_body(closure, path, nodes, rewrite, withheld, snapshot),
                                code_name(path, label), path in closure.postponed, owner)
                      for path in order]  # fmt: skip
        self.extra = [extra if path == closure.path or rewrite is not None else {}
                      for path in order]  # fmt: skip
        self.needs = [[(n.name, n.world) for n in closure.needs if n.path == path]
                      for path in order]  # fmt: skip
        # each file's imports of the repository's names, bound as it loads (`_load_files`)
        self.links = [[link for link in closure.links if link.path == path] for path in order]
        loaded = set(order)
        self.orphans = [link for link in closure.links if link.path not in loaded]
        self.link_order = {id(link): i for i, link in enumerate(closure.links)}
        self.withheld = [withheld_in(closure, path, withheld or {}) for path in order]
        self.deferred = deferred_reasons(closure, self.withheld, order)
        self.skippable = [self_contained(closure.nodes_of(path), closure, path) for path in order]
        self.method_kinds = dict(closure.method_kinds)
        roots, tops = package_roots(bound)
        self.module_names = [module_name(path, roots, tops) for path in order]
        self.module = module_maker(bound.probe, roots, tops)
        name = handed_type(bound)
        self.viewer = method_viewer(bound.probe, name) if closure.methods else None
        self.recorder = _recorder(bound, closure.defaults.fields, closure.entry_method)
        self.world, self.refresh = fresh_names(bound.names)
        self.spaces: dict[str, dict[str, Any]] = {}
        self.importers: dict[str, dict[str, Any]] = {}  # each file's namespace, before it runs
        repository = _repository_imports(closure, self.spaces, bound.probe)
        kinds = [m.made for m in (self.recorder, self.viewer) if m is not None]
        self.table = safe_builtins(bound, repository, self.importers, self.world,
                                   configuration_type(bound, kinds))  # fmt: skip

    def __call__(self) -> Callable[..., Any]:
        probe, closure, spaces = self.bound.probe, self.closure, self.spaces
        probe.unbound = None
        spaces.clear()
        self.importers.clear()
        self.refresh()
        probe.call[LOADING] = True  # what the modules do as they load, for every call
        try:
            self._load_files()
        finally:
            probe.call.pop(LOADING, None)
        if probe.unbound is not None:  # refused at load time, and caught there
            raise Unevaluable(unbound_reason(probe.unbound), probe.unbound.field)
        function = spaces[closure.path][closure.function]
        if self.viewer is not None:
            function = _with_viewer(function, self._methods(), self.viewer)
        if self.recorder is None:
            return function
        # an entry function's result as the world reads it; a method's (`__post_init__`)
        # is the object's fields, as constructing the configuration leaves them
        outputs, probe = self.bound.ctx.matrix.target.outputs, self.bound.probe
        stash_read = closure.entry and not closure.entry_method
        project = self.bound.ctx.world.project if stash_read else None
        if project is not None:
            project = functools.partial(project, probe, closure.defaults, outputs)
        begin = _marking(probe, METHOD_ENTRY) if closure.entry_method else None
        return _recording(function, self.recorder, entry=closure.entry, project=project,
                          begin=begin)  # fmt: skip

    def _load_files(self) -> None:
        """Run each file's module-level code in its own namespace, in load order: a file's
        imports from files loaded before it bound first, the rest once all are loaded (in
        the closure's order of them)."""
        probe, closure, spaces, world = self.bound.probe, self.closure, self.spaces, self.world
        pending = list(self.orphans)
        for n, path in enumerate(self.order):
            space = {"__builtins__": self.table, "__name__": self.module_names[n]}
            space = deferring_space(space, self.deferred[n], probe)
            self.importers[path] = space
            space.update({name: world[bound_as] for name, bound_as in self.needs[n]})
            pending += _bind_links(self.links[n], spaces, {path: space}, self.module)
            space.update(self.extra[n])
            if closure.entry and path != closure.path and self.skippable[n]:
                why = _load(self.codes[n], space, probe)
                space = space if why is None else failed_space(path, why, probe)
            else:
                _run(self.codes[n], space)
            for name in self.withheld[n]:  # an earlier statement's binding of it
                space.pop(name, None)
            spaces[path] = space
        pending.sort(key=lambda link: self.link_order[id(link)])
        _bind_rest(pending, spaces, self.module)

    def _methods(self) -> dict[str, Any]:
        """The loaded view methods, by name; one the policy withholds, a function refusing
        to run (with why) when the code calls it."""
        found = {}
        owner = _view_class_name(self.bound)
        for name, path in self.closure.methods:
            space = self.spaces[path]
            kind = self.method_kinds.get(name)
            loaded = space.get(METHOD_PREFIX + name)  # (a plain get: never `__missing__`)
            if kind in UNREAD or (loaded is not None and type(loaded) is not FunctionType):
                why = (
                    f"{owner}.{name} is a classmethod, is rebound in its class, is made by "
                    "a decorator harness does not follow, calls super() or defines a class: "
                    "how its class binds or names it is not read"
                )
                found[name] = _refusing(f"self.{name}", why, self.bound)
            elif loaded is not None:
                found[name] = method = loaded
                method.__name__, method.__qualname__ = name, f"{owner}.{name}"  # as SGLang's
                if kind == "staticmethod":
                    found[name] = staticmethod(method)  # called without the view
            else:  # withheld by the policy
                why = space.refuses(METHOD_PREFIX + name) if isinstance(space, Deferring) else None
                found[name] = _refusing(f"self.{name}", why or "withheld", self.bound)
        return found


UNREAD = ("classmethod", "rebound", "decorated", "super")  # view methods refused where called


def _view_class_name(bound: Bound) -> str:
    """The name of the class whose methods the view answers (SGLang's `ServerArgs`): the
    name a method's own messages give it (`ServerArgs.pick() takes 1 positional
    argument`), never the name the harness compiled it under."""
    facts = None if bound.ctx is None else bound.ctx.world.facts
    return facts.view_class[1] if facts is not None and facts.view_class else view_type(bound)


def _refusing(label: str, why: str, bound: Bound) -> Any:
    """A function of the world that refuses `label` when called, saying why."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise bound.probe.refuse(label, why)

    return world_function(label, refuse, bound.probe)


def _recorder(
    bound: Bound, fields: Collection[str] = (), method: bool = False
) -> Callable[[Any, dict[str, Any]], Any] | None:
    """The overlay a call's view is seen through when the world declares what code assigns
    to the view (`World.view_writes`), or the target is an entry point (`entry:`, which
    resolves the configuration it is handed by assigning and declaring); None when the
    world refuses writes (SGLang's passes: their view is read-only there too)."""
    if bound.ctx is None:
        return None
    if not (bound.ctx.world.view_writes or bound.ctx.matrix.target.entry):
        return None
    name, world = handed_type(bound), bound.ctx.world
    if not bound.ctx.matrix.target.entry:
        return overlay_maker("view", bound.probe, name=name, record=True)
    # (a field the class declares is its default; a class attribute of that name that is
    # no field, which the defaults do not read, still reads as missing: not followed)
    unset = world.unset - set(fields)

    def read(inner: Any, attr: str) -> Any:
        if attr in unset:  # not set yet, as on the configuration SGLang has just made
            raise AttributeError(f"{name!r} object has no attribute {attr!r}")
        return getattr(inner, attr)

    frozen = world.frozen_by if method else None
    guard = None if frozen is None else _frozen(bound.probe, frozen)
    answer = escaping(bound.probe) if world.snapshot is not None else None
    return overlay_maker("view", bound.probe, answer=answer, otherwise=read, name=name,
                         record=True, guard=guard, unhashable=HASH_FIX)  # fmt: skip


HASH_FIX = (
    "the configuration is a dataclass instance, which Python hashes only as its class's "
    "decorator says (SGLang's: unhashable), and harness does not read that: pass its "
    "fields instead"
)


FROZEN_FIX = (
    "once the resolution has applied its declarations ({flag}), {project}'s configuration "
    "decides a write to a field with its own __setattr__ (its guard refuses it), which "
    "harness does not run"
)


def _frozen(probe: Probe, flag: str) -> Callable[[dict[str, Any], str], None]:
    """A write's guard: a field assigned once the entry has set `flag` is refused (the
    world's own writes, `Probe.call[INTERNAL_WRITE]`, pass)."""

    def guard(written: dict[str, Any], attr: str) -> None:
        if attr.startswith("_") or probe.call.get(INTERNAL_WRITE) or not written.get(flag):
            return
        raise probe.refuse(f"view.{attr}", FROZEN_FIX.replace("{flag}", flag), done=ASSIGNED)

    return guard


def handed_type(bound: Bound) -> str:
    """The class name of what the target is handed, as Python's own messages show it: an
    entry's configuration is an instance of the configuration's class (SGLang's
    `ServerArgs`: `object of type 'ServerArgs' has no len()`); a pass's, the view's."""
    facts = None if bound.ctx is None else bound.ctx.world.facts
    if facts is not None and bound.ctx.matrix.target.entry and facts.class_name is not None:
        return facts.class_name
    return view_type(bound)


def configuration_type(bound: Bound, kinds: list[type]) -> Callable[[Any], Any] | None:
    """For an entry: what `type(obj)` gives when obj is the configuration the entry is
    handed, seen through one of the overlays of `kinds` (the recording one, the one
    answering its class's methods): the world's object for its class; else None."""
    facts = None if bound.ctx is None else bound.ctx.world.facts
    if not kinds or not bound.ctx.matrix.target.entry or facts.class_name is None:
        return None
    found = bound.names.get(facts.class_name)

    def configuration(obj: Any) -> Any:
        return found if type(obj) in kinds else None

    return configuration


def _marking(probe: Probe, flag: str) -> Callable[[], None]:
    """What sets `flag` in the world's state of each call (`Probe.call`, made anew as a
    call starts)."""

    def mark() -> None:
        probe.call[flag] = True

    return mark


def _recording(
    function: Callable[..., Any], recorder: Callable[[Any, dict[str, Any]], Any],
    entry: bool = False, project: Callable[[dict[str, Any], Any], dict[str, Any]] | None = None,
    begin: Callable[[], Any] | None = None,
) -> Callable[..., Any]:  # fmt: skip
    """`function`, called with the view seen through `recorder`: each call's writes are
    its own (a fresh overlay), read back after they are made (never the input: no axis
    is read), and declared under what it returns (a dict wins; None, or the view itself,
    `return config`, declares the writes alone). An entry point's return value is not
    read (SGLang's callers drop it): its writes alone are its outcome, as `project`
    reads them where given (the world's: declarations kept apart from the fields, read
    with the configuration as it was handed). `begin`, if given, runs first in each call."""

    @functools.wraps(function)
    def call(view: Any) -> Any:
        if begin is not None:
            begin()
        written: dict[str, Any] = {}
        seen = recorder(view, written)
        result = function(seen)
        if entry and project is not None:
            return project(written, view)
        if entry:  # (a snapshot kept there is the plain dict it is: `snapshots`)
            return {k: v.escaped() if type(v) is Snapshot else v for k, v in written.items()}
        if result is None or result is seen:
            return dict(written)
        if type(result) is dict and written:
            return {**written, **result}
        return result

    return call


MUTABLE = (list, dict, set, bytearray)  # plain data a world may bind a name to, changeable


def fresh_names(names: dict[str, Any]) -> tuple[dict[str, Any], Callable[[], None]]:
    """A copy of the world's names, and `refresh()`, which binds each name of mutable
    plain data (a matrix's `bindings: X: [..]`) to a new copy of its value as it is here:
    what one load changes in it, the next never sees (the world's stand-ins and functions
    refuse writes: see `harness.engine.world`)."""
    mutable = {name: copy.deepcopy(v) for name, v in names.items() if type(v) in MUTABLE}
    world = copy.copy(names)  # of the same class: the runs on symbols answer any name

    def refresh() -> None:
        if mutable:
            world.update(copy.deepcopy(mutable))

    return world, refresh


def _body(
    closure: Closure,
    path: str,
    nodes: tuple[ast.stmt, ...] | None,
    rewrite: Callable[[str, tuple[ast.stmt, ...]], tuple[ast.stmt, ...]] | None,
    withheld: Withheld | None = None,
    snapshot: str | None = None,
) -> ast.Module:
    """The statements a file runs: its closure's (or `nodes`, for the target's), rewritten
    (and their reads of a name: `harness.engine.own_names`; an entry's snapshot of its
    configuration, in the world's attribute `snapshot`: `harness.engine.snapshots`),
    without the functions the policy withholds."""
    body = nodes if nodes is not None and path == closure.path else closure.nodes_of(path)
    if rewrite is not None:
        body = rewrite(path, body)
    if snapshot is not None and closure.entry:
        free = (n.name for n in closure.needs if n.path == path)
        body = snapshot_rewritten(body, snapshot, free)
    kept = withholding(closure, tuple(body), path, withheld or {}, closure.nodes_of(path))
    body = rewritten(kept, path)
    return ast.Module(body=list(body), type_ignores=[])


def _bind_rest(pending: list, spaces: dict[str, dict], module: Callable[..., Any]) -> None:
    """Names a file imports from one loaded after it (a cycle, a re-export)."""
    while pending:
        rest = _bind_links(pending, spaces, spaces, module)
        if len(rest) == len(pending):
            raise Unevaluable(_unresolved(rest[0]))
        pending = rest


def with_methods(
    function: Callable[..., Any],
    methods: dict[str, Any],
    probe: Probe | None = None,
    kind: str = "view",
) -> Callable[..., Any]:
    """`function`, called with a view (of class `kind`) that also answers the view
    class's methods (the extracted ones, bound to it as SGLang's are)."""
    return _with_viewer(function, methods, method_viewer(probe, kind))


def method_viewer(probe: Probe | None, kind: str) -> Callable[[Any, dict[str, Any]], Any]:
    """`make(view, methods)`: the view answering `methods` too (an overlay of class
    `kind`, made once)."""

    def bound_method(view: Any, method: Any) -> Any:
        if type(method) is staticmethod:  # `@staticmethod` in the view's class
            return method.__func__
        return MethodType(method, view)

    return overlay_maker("view", probe, answer=bound_method, name=kind)


def _with_viewer(
    function: Callable[..., Any], methods: dict[str, Any], viewer: Callable[..., Any]
) -> Callable[..., Any]:
    @functools.wraps(function)
    def call(view: Any) -> Any:
        return function(viewer(view, methods))

    return call


def load_order(closure: Closure) -> list[str]:
    """The closure's files, each after the files it imports from (cycles broken), the
    target's last."""
    sources: dict[str, set[str]] = {}
    for link in closure.links:
        sources.setdefault(link.path, set()).add(link.source)
    order: list[str] = []

    def visit(path: str, path_seen: set[str]) -> None:
        if path in order or path in path_seen:
            return
        for source in sorted(sources.get(path, ())):
            visit(source, path_seen | {path})
        order.append(path)

    for path in [*closure.files[1:], closure.path]:
        visit(path, set())
    return order


def _bind_links(
    links: list, spaces: dict[str, dict], targets: dict[str, dict], module: Callable[..., Any]
) -> list:
    """Bind each link whose source file is loaded into its (target) namespace (a whole
    module as `module(path, namespace)`); return the rest."""
    rest = []
    for link in links:
        if link.path not in targets or link.source not in spaces:
            rest.append(link)
            continue
        source, target = spaces[link.source], targets[link.path]
        if link.source_name is None:
            target[link.name] = module(link.source, source)
        elif link.source_name in source:
            target[link.name] = source[link.source_name]
        elif isinstance(source, Deferring) and source.refuses(link.source_name) is not None:
            if isinstance(target, Deferring):  # refused where the importing code reads it
                target.why[link.name] = source.refuses(link.source_name)
        else:
            rest.append(link)  # a name the source file imports in turn: bound in a later round
    return rest


def _unresolved(link) -> str:
    return (
        f"{link.path} imports {link.source_name} from {link.source}, where no definition "
        "of it could be loaded (an import cycle between definitions?)"
    )


def _compiled(module: ast.Module, filename: str, postponed: bool = False,
              owner: str = "") -> CodeType:  # fmt: skip
    """The file's code as Python compiles it: with the file's own `from __future__ import
    annotations` (`postponed`: annotations kept because they may act are then never
    evaluated, as in SGLang), never the harness's; what a method of the view's class
    (compiled as a function of its own) defines is named as in class `owner`."""
    flags = __future__.annotations.compiler_flag if postponed else 0
    try:
        return _as_in_class(compile(module, filename, "exec", flags=flags, dont_inherit=True),
                            owner)  # fmt: skip
    except BaseException as exc:  # a construct Python itself refuses (`nonlocal` at the top)
        where = line_in(exc.__traceback__)
        raise Unevaluable(
            f"module-level code of the closure raised {describe(exc)} at {where}"
        ) from None


def _as_in_class(code: CodeType, owner: str) -> CodeType:
    """`code` with each function's qualified name `METHOD_PREFIX + name...` made
    `owner.name...` (what Python names a function, and its errors, in its class)."""
    consts = tuple(_as_in_class(c, owner) if isinstance(c, CodeType) else c
                   for c in code.co_consts)  # fmt: skip
    qualname = code.co_qualname
    if owner and qualname.startswith(METHOD_PREFIX):
        qualname = f"{owner}.{qualname.removeprefix(METHOD_PREFIX)}"
    return code.replace(co_consts=consts, co_qualname=qualname)


def _load(code: CodeType, space: dict[str, Any], probe: Probe) -> str | None:
    """Run a file's module-level code (of an entry's closure, not the entry's own file):
    None, or why it could not run (what it raised, or a refusal, caught there or not).
    A refused write (`envs.X.set()` as it loads) is raised instead: the file's names
    may go unread, but what it would have written is lost either way. A refusal an
    earlier file met stays the probe's, to be found when the load ends."""
    before, probe.unbound = probe.unbound, None
    try:
        try:
            _run(code, space)
        except Unevaluable as exc:
            why: str | None = str(exc)
        else:
            why = None if probe.unbound is None else unbound_reason(probe.unbound)
        if probe.unbound is not None and probe.unbound.done != READ:
            raise Unevaluable(why or unbound_reason(probe.unbound), probe.unbound.field)
        return why
    finally:
        probe.unbound = before


def _run(code: CodeType, space: dict[str, Any]) -> None:
    try:
        exec(code, space)
    except Unbound as exc:
        raise Unevaluable(unbound_reason(exc)) from None
    except BaseException as exc:  # SystemExit too: it is the code's, not the harness's
        where = line_in(exc.__traceback__)
        raise Unevaluable(
            f"module-level code of the closure raised {describe(exc)} at {where}"
        ) from None


def view_type(bound: Bound) -> str:
    """The name of the view's class in the world `bound` was compiled from."""
    return "view" if bound.ctx is None else bound.ctx.world.facts.view_type


def module_maker(
    probe: Probe, roots: tuple[str, ...], tops: tuple[str, ...]
) -> Callable[[str, dict[str, Any]], Any]:
    """`make(path, namespace)`: a repository module as an imported name, its extracted
    definitions read-only (a write is refused: harness runs each cell alone, so what a
    pass sets on a module would not carry over as in SGLang's one process)."""

    def missing(inner: tuple[str, dict], name: str) -> Any:
        path, space = inner
        why = space.refuses(name) if isinstance(space, Deferring) else None
        if why is not None:  # an entry's: refused where read, as a global of the file is
            raise probe.refuse(f"{module_name(path, roots, tops)}.{name}", why)
        raise AttributeError(f"module {module_name(path, roots, tops)!r} has no attribute {name!r}")

    def write(inner: tuple[str, dict], name: str, done: str) -> BaseException:
        fix = "evaluated code may not change a module's names: return what it declares"
        return refusal(probe, f"{module_name(inner[0], roots, tops)}.{name}", fix, done)

    overlay = overlay_maker("module", probe, otherwise=missing, write=write)

    def make(path: str, space: dict[str, Any]) -> Any:
        return overlay((path, space), space)

    return make


def package_roots(bound: Bound) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The matrix's source roots, and the top-level packages the world names (`sglang`):
    what gives a loaded file's `__name__` as the project imports it (`module_name`)."""
    if bound.ctx is None:
        return (), ()
    return bound.ctx.matrix.target.roots, bound.ctx.world.facts.tops


def _repository_imports(closure: Closure, spaces: dict[str, dict],
                        probe: Probe) -> dict[tuple, dict]:  # fmt: skip
    """For each (importing file, module, level) an import inside a function names, the
    names it reads from the repository: name -> a getter of the loaded definition, or
    of a stand-in refusing every use for a name from outside an entry's code."""
    out: dict[tuple, dict[str, Callable[[], Any]]] = {}
    for item in closure.local_imports:
        names = out.setdefault((item.path, item.module, item.level), {})
        if item.deferred:
            made = deferred_import(probe, item.local, item.deferred)
            names[item.name] = functools.partial(_given, made)
        else:
            names[item.name] = functools.partial(_loaded, spaces, item.source, item.source_name)
    return out


def _given(value: Any) -> Any:
    return value


def _loaded(spaces: dict[str, dict], path: str, name: str) -> Any:
    try:
        return spaces[path][name]
    except KeyError:
        raise Unevaluable(f"{name} from {path} is imported before it is defined") from None


MUTATOR_FIX = (
    "a mutating method taken by a name harness cannot read before running may change "
    "state a later call sees, which {project}'s one call per process never does: call it "
    "as x.append(...) instead"
)


def safe_builtins(
    bound: Bound,
    repository: dict[tuple, dict] | None = None,
    spaces: dict | None = None,
    names: dict[str, Any] | None = None,
    configuration: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """The allowed builtins; `getattr`, `hasattr`, `setattr` and `type` guarded, `print`
    silent,
    `import` answered by the world (its `names`, by default the bound's; and the
    repository's definitions, for the files whose namespaces `spaces` holds by path);
    `type` of an entry's configuration is what `configuration(obj)` gives (None: not
    the configuration)."""
    table = dict(_allowed_builtins())
    probe = bound.probe

    def checked(name: Any, through: str) -> str:
        if type(name) is not str or forbidden_attribute(name):
            shown = name if type(name) is str else type(name).__name__
            raise probe.refuse(f"attribute {shown[:80]} (through {through})", POLICY_FIX)
        if name in MUTATORS:  # a name the purity check could not read: state it missed
            raise probe.refuse(f"the method {name} (through {through})", MUTATOR_FIX)
        return name

    def guarded_getattr(obj: Any, name: Any, *default: Any) -> Any:
        return getattr(obj, checked(name, "getattr"), *default)

    def guarded_hasattr(obj: Any, name: Any) -> bool:
        return hasattr(obj, checked(name, "hasattr"))

    def type_of(obj: Any, /) -> type:
        if type(obj) is super:  # `type(super())(X, obj)`: super with arguments
            raise probe.refuse("the type of a super object (through type)", POLICY_FIX)
        if is_stand_in(obj):  # the world's stand-ins, the harness's own objects
            found = None if configuration is None else configuration(obj)
            if found is not None:  # an entry's configuration: its class, as the world has it
                return found
            raise probe.refuse("the type of an object of the world (through type)", TYPE_FIX)
        found = type(obj)
        if issubclass(found, type):  # `type(type(()))`: `type` itself, called with three
            raise probe.refuse("the type of a class (through type)", POLICY_FIX)  # arguments
        return found

    def guarded_setattr(obj: Any, name: Any, value: Any, /) -> None:
        # as `obj.name = value`: the entry's configuration records it, the world's other
        # stand-ins refuse it; a write to anything else is seen by the purity check (a
        # closure naming setattr, but to call it on a fresh local, runs each call afresh)
        setattr(obj, checked(name, "setattr"), value)

    def silent(*args: Any, **kwargs: Any) -> None:
        return None

    made = {"getattr": guarded_getattr, "hasattr": guarded_hasattr, "type": type_of,
            "setattr": guarded_setattr, "print": silent}  # fmt: skip
    world = bound.names if names is None else names
    made["__import__"] = _import_from(bound, repository or {}, {} if spaces is None else spaces,
                                      world)  # fmt: skip
    table.update({name: world_function(name, fn, probe) for name, fn in made.items()})
    table[READER] = world_function(READER, name_reader(probe.refuse), probe)
    snapshot = None if bound.ctx is None else bound.ctx.world.snapshot
    if snapshot is not None and configuration is not None:
        made = snapshot_builtins(probe, snapshot, table["getattr"], configuration)
        table.update({name: world_function(name, fn, probe) for name, fn in made.items()})
    return table


@functools.cache
def _allowed_builtins() -> dict[str, Any]:
    """The allowed builtins as Python has them (each load copies this: a fresh table)."""
    return {name: getattr(builtins, name) for name in ALLOWED_BUILTINS if hasattr(builtins, name)}


def _import_from(
    bound: Bound, repository: dict[tuple, dict], spaces: dict, names: dict[str, Any]
) -> Callable[..., Any]:
    """`import` inside evaluated code: a module whose attributes are the definitions the
    closure read from the repository for that import, else the world's names (`import m`
    of a name the world binds, such as `torch`: that binding, as at module level). The
    importing file is the one whose namespace (in `spaces`, by path) is the importer's
    globals: found by identity, whatever the code set `__name__` to."""
    module = _world_module_maker(bound.probe, names)
    index: dict[int, str] = {}  # id of each namespace in `spaces` when last read -> path

    def importer(space: Any) -> str | None:
        """The first path `spaces` holds `space` under (None: none), as a scan finds it."""
        path = index.get(id(space))
        if path is None or spaces.get(path) is not space:  # `spaces` changed since
            index.clear()
            for held_as, held in spaces.items():  # (a live object's id is its own)
                index.setdefault(id(held), held_as)
            path = index.get(id(space))
        return path

    def world_import(name: Any, globals: Any = None, locals: Any = None, fromlist: Any = (),
                     level: Any = 0) -> Any:  # fmt: skip
        path = importer(globals)
        local = repository.get((path, str(name), level if type(level) is int else 0), {})
        top = str(name).partition(".")[0]
        if not local and not fromlist and level == 0 and top in names:
            return names[top]  # `import torch` in a function: the world's torch, as bound
        return module(str(name), local)

    return world_import


def _world_module_maker(
    probe: Probe, names: dict[str, Any]
) -> Callable[[str, dict[str, Callable[[], Any]]], Any]:
    """`make(module, local)`: what `import` gives evaluated code, the world's `names` (the
    repository's definitions `local` holds first), nothing of the harness."""

    def read(module: str, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return names[name]
        except KeyError:
            raise probe.refuse(
                f"{module}.{name}",
                f"the world does not bind it: bind {name} under `bindings:` in the matrix",
            ) from None

    def write(module: str, name: str, done: str) -> BaseException:
        return probe.refuse(f"{module}.{name}", write_fix(module, name), done=done)

    make = overlay_maker("module", probe, lambda _, get: get(), read, write)
    return make


def unbound_reason(exc: Unbound) -> str:
    """`WHAT is read at PATH:LINE: FIX` (or assigned, or deleted: as the code did)."""
    return f"{exc.what} is {exc.done} at {line_in(exc.__traceback__)}: {exc.fix}"


def line_in(tb: TracebackType | None) -> str:
    """`path:line` of the innermost frame of evaluated code (compiled as `path@label`)."""
    where = "the evaluated code"
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if "@" in filename and not filename.startswith(("/", "<")):
            where = f"{filename.rsplit('@', 1)[0]}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def describe(exc: BaseException) -> str:
    """`Type: message`, bounded; the evaluated code's own `__str__` may raise or lie."""
    name = type(exc).__name__
    try:
        message = str(exc)
    except BaseException:
        message = "(its message could not be read)"
    if type(message) is not str:
        message = ""
    message = message if len(message) <= 500 else message[:500] + "..."
    return f"{name}: {message}" if message else name

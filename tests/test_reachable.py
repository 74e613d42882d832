"""Nothing of the harness is reachable from what the world hands evaluated code.

The walk starts at every object evaluated code can be given: the view (plain,
with a fallback, as a pipeline's overlay and as the method-answering view),
every name the world binds for each shipped matrix (the sglang world, and the
plain world over the same matrices), an imported world module, a loaded
repository module and the builtins table. From each object it follows, to a
bounded depth, `type()`, every attribute whose name is not a dunder (a superset
of what the policy lets evaluated code read), the value of every call with
plain arguments, and a call of the object's type (making one). Nothing it
reaches may be a module, a frame, a function of the harness, or an object (or
a class) of a module of the harness. The walk is checked to be able to fail: it
finds the harness's own objects when handed one.
"""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.engine.sandbox import chain, module_maker, safe_builtins, with_methods
from harness.engine.world import (
    Bound,
    Const,
    Obj,
    Spec,
    Unbound,
    bind,
    with_view_fallback,
    world_function,
)
from harness.engine.worlds import WORLDS
from harness.errors import HarnessError
from harness.matrix.load import load_matrix

MATRICES = sorted(p.stem for p in (Path(__file__).parent.parent / "matrices").glob("*.yaml"))
HARNESS_DIR = str(Path(harness.__file__).parent)
DEPTH = 4
ARGUMENTS = [(), (0,), (1,), (10,), ("full",), (None,), (True,), ("x", "y")]
PLAIN = (type(None), bool, int, float, complex, str, bytes, type(NotImplemented), type(...))
CONTAINERS = (list, tuple, set, frozenset, dict)
# Names tried on every object besides its class's own: what the escape used, what
# wrappers of the standard library expose, what loggers and modules have.
SUSPECTS = (
    "otherwise", "answer", "_view", "_declared", "_inner", "_bound", "_local", "_module",
    "func", "args", "keywords", "get", "value", "is_set", "name", "level", "handlers",
    "parent", "manager", "root", "disabled", "propagate", "getEffectiveLevel", "getChild",
    "setLevel", "isEnabledFor", "ALL", "PIECEWISE", "MLA", "MHA", "probe", "names", "view",
    "ctx", "world", "matrix", "fix", "what", "field", "done", "cell", "read", "unbound",
    "FULL", "BREAKABLE", "DISABLED", "TC_PIECEWISE",
)  # fmt: skip


def of_harness(module: Any) -> bool:
    return isinstance(module, str) and (module == "harness" or module.startswith("harness."))


def leak(obj: Any) -> str | None:
    """What is wrong with evaluated code holding `obj`, if anything (asked of its type:
    `isinstance` would ask a stand-in its `__class__`, which it refuses)."""
    kind = type(obj)
    if issubclass(kind, types.ModuleType):
        return "a module"
    if issubclass(kind, types.FrameType | types.TracebackType | types.CodeType):
        return "a frame, traceback or code object"
    function = obj.__func__ if issubclass(kind, types.MethodType) else obj
    if issubclass(type(function), types.FunctionType) and (
        of_harness(function.__module__) or function.__code__.co_filename.startswith(HARNESS_DIR)
    ):
        return "a function of the harness"
    if issubclass(kind, type) and of_harness(obj.__module__):
        return "a class of the harness"
    if of_harness(type(obj).__module__):
        return "an object of a class of the harness"
    return None


def is_a(obj: Any, kinds: Any) -> bool:
    """`isinstance` asked of the object's type alone (Python's would ask a stand-in its
    `__class__`, which the world's refuse)."""
    return issubclass(type(obj), kinds)


@dataclass
class Walk:
    """Every object reached from the roots, and each leak with the path to it."""

    names: tuple[str, ...]
    leaks: list[tuple[str, str]] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)
    kept: list[Any] = field(default_factory=list)  # so ids stay unique while walking
    reached: dict[str, Any] = field(default_factory=dict)

    def visit(self, path: str, obj: Any, depth: int) -> None:
        self.reached.setdefault(path, obj)
        problem = leak(obj)
        if problem:
            self.leaks.append((path, problem))
            return
        if id(obj) in self.seen or depth <= 0 or is_a(obj, PLAIN):
            return
        self.seen.add(id(obj))
        self.kept.append(obj)
        for step, child in self.children(obj):
            self.visit(f"{path}{step}", child, depth - 1)

    def children(self, obj: Any) -> Iterator[tuple[str, Any]]:
        if is_a(obj, CONTAINERS):
            items = obj.items() if is_a(obj, dict) else enumerate(obj)
            for key, item in items:
                yield f"[{key!r}]", item
            return
        kind = type(obj)
        yield ".<type>", kind
        if is_a(obj, types.FunctionType):  # a function of the world: what it returns
            yield from self.calls(obj)
            return
        if kind.__module__ == "builtins" and not is_a(obj, type):
            return  # Python's own objects of Python's own types: nothing of the world's
        if is_a(obj, type) and obj.__module__ == "builtins":
            return
        for name in self.names_of(obj):
            yield from self.outcome(f".{name}", lambda name=name: getattr(obj, name))
        if callable(obj):
            yield from self.calls(obj)
        if kind.__module__ != "builtins":
            yield from self.outcome(".<type>()", kind)
            yield from self.outcome(".<type>(itself)", lambda: kind(obj))
            yield from self.outcome(".<subclass>", lambda: types.new_class("Sub", (kind,)))

    def calls(self, obj: Any) -> Iterator[tuple[str, Any]]:
        for args in ARGUMENTS:
            yield from self.outcome(f"{args!r}", lambda args=args: obj(*args))

    def names_of(self, obj: Any) -> list[str]:
        own = [n for n in dir(type(obj)) if not (n.startswith("__") and n.endswith("__"))]
        if is_a(obj, type):
            own += [n for n in dir(obj) if not n.startswith("__")]
        return sorted({*own, *self.names})

    def outcome(self, step: str, make: Callable[[], Any]) -> Iterator[tuple[str, Any]]:
        """What `make()` gives, or the exception it raises (which evaluated code could
        catch); an Unbound's own class is the harness's, and `type()` refuses it in
        evaluated code (tests/test_hostile_reach.py), so only its contents are walked."""
        try:
            value = make()
        except Unbound as exc:
            yield f"{step}!", [exc.what, exc.fix, exc.field, exc.done, exc.args]
        except HarnessError as exc:
            yield f"{step}!", exc
        except Exception as exc:
            yield f"{step}!", exc
        else:
            yield step, value


def spec_names(specs: list[Any]) -> set[str]:
    """Every attribute name the world's specs declare, at any depth."""
    found: set[str] = set()
    stack = list(specs)
    while stack:
        spec = stack.pop()
        if isinstance(spec, Obj):
            found.update(spec.attrs)
            stack.extend(spec.attrs.values())
        elif isinstance(spec, Spec):
            stack.extend(v for v in vars(spec).values() if isinstance(v, Spec | tuple))
        elif isinstance(spec, tuple):
            stack.extend(spec)
    return found


def pool(bound: Bound) -> tuple[str, ...]:
    world, matrix = bound.ctx.world, bound.ctx.matrix
    specs = [*world.names.values(), *world.view_attrs.values()]
    names = {*spec_names(specs), *world.names, *world.view_attrs, *matrix.axis_names,
             *matrix.fields, *SUSPECTS, "marker", "size"}  # fmt: skip
    return tuple(sorted(n for n in names if n.isidentifier()))


def capture(into: list[Any]) -> Callable[[Any], dict]:
    """A stand-in for a pass: keeps the view it is handed."""

    def seen(view: Any) -> dict:
        into.append(view)
        return {"page_size": 1, "marker": "declared"}

    return seen


def roots_of(bound: Bound) -> dict[str, Any]:
    """Every object the harness hands evaluated code for this compiled world."""
    views: list[Any] = []
    chain([capture(views), capture(views)], bound.probe)(bound.view)
    with_methods(capture(views), {"use_mla_backend": lambda self: True}, bound.probe)(bound.view)
    fallback = with_view_fallback(bound, lambda name: Const(None)).view
    table = safe_builtins(bound)
    made = {k: v for k, v in table.items() if v is not getattr(builtins, k, None)}
    loaded = module_maker(bound.probe, (), ())("python/pkg/mod.py", {"size": 1, "__name__": "x"})
    return {
        "view": bound.view,
        "pipeline view": views[0],  # one overlay for every pass, over what they declared
        "method view": views[2],
        "view with defaults": fallback,
        "names": dict(bound.names),
        "builtins": made,
        "import torch": table["__import__"]("torch"),
        "loaded module": loaded,
    }


def bounds() -> Iterator[tuple[str, Bound]]:
    for name in MATRICES:
        matrix = load_matrix(name)
        yield f"sglang/{name}", bind(WORLDS["sglang"], matrix)
        try:
            yield f"plain/{name}", bind(WORLDS["plain"], matrix)
        except HarnessError:  # an output that is no axis or field: plain has no defaults
            continue


BOUNDS = dict(bounds())


def walk(bound: Bound, roots: dict[str, Any]) -> Walk:
    walker = Walk(pool(bound))
    for name, obj in roots.items():
        walker.visit(name, obj, DEPTH)
        bound.probe.unbound = None
    return walker


@pytest.mark.parametrize("which", sorted(BOUNDS))
def test_nothing_of_the_harness_is_reachable_from_the_world(which: str):
    bound = BOUNDS[which]
    walker = walk(bound, roots_of(bound))
    assert walker.leaks == [], walker.leaks[:10]
    assert len(walker.seen) > 40, len(walker.seen)  # the walk went somewhere


def test_the_walk_reaches_what_the_sglang_world_answers():
    """Not a vacuous walk: the answers SGLang's code reads are among what it reached."""
    bound = BOUNDS["sglang/sglang-fa4-page-size"]
    reached = walk(bound, roots_of(bound)).reached
    assert reached["names['Backend'].FULL"] == "full"
    assert reached["names['get_platform']().is_sm100"] is False  # the first cell: sm90
    assert reached["names['logger'].info()"] is None
    assert reached["pipeline view.marker"] == "declared"
    assert callable(reached["method view.use_mla_backend"])
    assert reached["loaded module.size"] == 1


@pytest.mark.parametrize(
    "leaky",
    [
        pytest.param(lambda b: b, id="the bound world"),
        pytest.param(lambda b: b.probe, id="the probe"),
        pytest.param(lambda b: {"f": bind}, id="a harness function in a dict"),
        pytest.param(lambda b: types.SimpleNamespace(otherwise=harness), id="a module"),
    ],
)
def test_the_walk_finds_the_harness_when_handed_it(leaky):
    bound = BOUNDS["sglang/sglang-fa4-page-size"]
    walker = walk(bound, {"leaky": leaky(bound)})
    assert walker.leaks, "the walk missed a harness object"


def test_the_walk_follows_calls_to_the_harness():
    """A world function that returns a harness function (as `register_post_process()`
    once returned a lambda of the harness) is found through the call."""
    bound = BOUNDS["sglang/sglang-fa4-page-size"]
    walker = walk(bound, {"decorator": world_function("decorator", lambda *a: bind)})
    assert ("decorator()", "a function of the harness") in walker.leaks, walker.leaks

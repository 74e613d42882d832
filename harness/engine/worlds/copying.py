"""Python's `copy.deepcopy` and `copy.copy`, for the values resolution code copies.

SGLang's handlers copy what they are about to change (0.5.23's memory handler:
`copy.deepcopy(cfg.cuda_graph_config)`, a dataclass its own code made, "so an
earlier declaration keeps the value it recorded"). Python's `copy` reaches an
object's class through its reduction protocol (`__reduce_ex__`, `__getstate__`,
`copyreg`), which evaluated code may not, and which would copy the world's
stand-ins by their own machinery. So the world copies what Python copies the same
way without it, with Python's results:

- what Python's `deepcopy` returns as it is (None, numbers, strings, bytes,
  functions, classes, ranges) is returned as it is;
- lists, tuples, dicts, sets and frozensets are copied element by element, as
  Python does: a list or dict is remembered before its items are copied, a set,
  frozenset or tuple after (a frozenset is always new, a tuple whose items are
  all unchanged is itself, one copied meanwhile through a cycle is that copy), so
  shared and cyclic structure comes out as Python's;
- an instance of a class the evaluated code made (a dataclass of its own) is
  made with its class's `__new__` and given a copy of its `__dict__`, as Python's
  default reduction does, unless a class of it defines a hook of the protocol
  (`__deepcopy__`, `__copy__`, `__reduce__`, `__reduce_ex__`, `__getstate__`,
  `__setstate__`) or slots, or is a builtin (a subclass of list or Exception,
  which Python copies its own way): those are refused;
- anything else (a stand-in of the world, a `memo` handed in) is refused.

`copy.copy` does the same one level deep.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any

from harness.engine.world import Context, Obj, Probe, Resolver, Spec, is_stand_in, world_function

ATOMIC = (type(None), type(Ellipsis), type(NotImplemented), bool, int, float, complex,
          str, bytes, range, types.FunctionType, types.BuiltinFunctionType, type,
          property)  # fmt: skip
HOOKS = ("__deepcopy__", "__copy__", "__reduce__", "__reduce_ex__", "__getstate__",
         "__setstate__", "__slots__")  # fmt: skip
HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement, not a builtin
COPY_FIX = (
    "harness copies lists, tuples, dicts, sets and the instances of the code's own "
    "classes that define no copying hook; copy the fields instead"
)


@dataclasses.dataclass(frozen=True)
class Copier(Spec):
    """`copy.deepcopy` (`deep`) or `copy.copy`."""

    deep: bool

    def compile(self, ctx: Context) -> Resolver:
        probe = ctx.probe
        label = "copy.deepcopy" if self.deep else "copy.copy"

        def answer(x: Any, *rest: Any, **options: Any) -> Any:
            if rest or options:
                raise probe.refuse(f"{label}() with a memo", COPY_FIX)
            return _copy(probe, label, x, {}, self.deep)

        function = world_function(label, answer, probe)
        return lambda probe: function


def _copy(probe: Probe, label: str, x: Any, memo: dict[int, Any], deep: bool) -> Any:
    kind = type(x)
    if kind in ATOMIC or (isinstance(x, type) and not is_stand_in(x)):
        return x
    if id(x) in memo:
        return memo[id(x)]
    inner = (lambda v: _copy(probe, label, v, memo, True)) if deep else (lambda v: v)
    made = _container(x, kind, memo, inner, deep)
    if made is None:
        made = _instance(probe, label, x, kind, memo, inner)
    return made


def _container(x: Any, kind: type, memo: dict[int, Any], inner: Callable[[Any], Any],
               deep: bool) -> Any | None:  # fmt: skip
    made: Any
    if kind is list:
        made = memo[id(x)] = []
        made.extend(inner(item) for item in x)
        return made
    if kind is dict:
        made = memo[id(x)] = {}
        for key, value in x.items():
            made[inner(key)] = inner(value)
        return made
    if kind in (set, frozenset):  # Python's reduction: the items first, then a new one
        items = [inner(item) for item in x]
        if deep:
            made = memo[id(x)] = kind(items)
            return made
        return set(items) if kind is set else x
    if kind is tuple:  # Python's: the items first; a copy made meanwhile (a cycle) wins
        items = [inner(item) for item in x]
        if id(x) in memo:
            return memo[id(x)]
        same = all(a is b for a, b in zip(items, x, strict=True))
        made = x if same else tuple(items)
        if made is not x:
            memo[id(x)] = made
        return made
    return None


def _instance(probe: Probe, label: str, x: Any, kind: type, memo: dict[int, Any],
              inner: Callable[[Any], Any]) -> Any:  # fmt: skip
    """An instance of a class of the evaluated code, copied as Python's default reduction
    copies it; anything else refused."""
    name = type.__dict__["__name__"].__get__(kind)
    own = [c for c in type.__dict__["__mro__"].__get__(kind) if c is not object]
    builtin = any(not type.__dict__["__flags__"].__get__(c) & HEAP_TYPE for c in own)
    if is_stand_in(x) or not own or builtin or any(h in vars(c) for c in own for h in HOOKS):
        raise probe.refuse(f"{label}() of a {name}", COPY_FIX)
    state = object.__getattribute__(x, "__dict__")
    made = memo[id(x)] = kind.__new__(kind)
    object.__getattribute__(made, "__dict__").update({k: inner(v) for k, v in state.items()})
    return made


def names() -> dict[str, Spec]:
    """The world's `copy` module (`import copy`; `from copy import deepcopy, copy`)."""
    made = {"deepcopy": Copier(deep=True), "copy": Copier(deep=False)}
    return {"deepcopy": made["deepcopy"], "copy": Obj("copy", made)}

"""Python's `enum.Enum` and `enum.auto`, for the enumerations a project's code makes.

A project's resolution code names its choices with enumerations (SGLang's
`SpeculativeAlgorithm(Enum)`, whose `from_string` the speculative handler
calls, and `RaggedVerifyMode(str, Enum)`). Such a class is made by Python's own
machinery, so what it does (its members and their values, `auto()`, aliases,
`cls[name]`, `cls(value)`, iteration, `in`, a `str` mixin's comparisons, its
`repr` and `str`) is Python's, whatever Python runs the harness.

Three things are kept from evaluated code, each a way out Python's enum
otherwise hands it:

- the functional API: `Enum("X", {...})` (or any call of an enumeration with
  more than its value) makes a class from a mapping, special methods included,
  which no class statement the policy reads could make; it is refused;
- the enum's machinery, whose names are all `_sunder_` (`_convert_` reads and
  writes the dicts of loaded modules, `_create_` is the functional API,
  `_new_member_` is `object.__new__`): the policy refuses every `_sunder_`
  attribute, read or written, and `_sunder_` names in a class body
  (`harness.engine.policy`);
- the world's own `Enum`, which is made afresh for each compiled world and refuses
  writes, and Python's `auto` objects: enum's machinery writes the value it picks
  into the `auto()` a class body is given (and compares a given value with its own
  marker, handing the code that marker), and `type(auto())` and its `value` are
  objects every cell of the process shares. So `auto()` gives the code an opaque
  token (its type, repr and attributes refused), which an enumeration's class body
  turns into a fresh `auto()` of Python's (or into the value given, which Python
  takes the same way) as it takes it, alone or in a plain tuple, as Python reads
  one. The policy lets the code call `auto` only for a member's value in a class
  body, so no token is kept; and a token is taken once, in the call (or the
  loading) that made it, and refused in a class that is no enumeration.

A class of the code's own (`class Mode(Enum)`) is the code's, as in Python:
what it sets on it is seen by the purity check like any other write.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from harness.engine.world import (
    ASSIGNED,
    DELETED,
    READ,
    Context,
    Obj,
    Resolver,
    Shared,
    Spec,
    refusal,
    stand_in_class,
    world_function,
)

FIX = "define the enumeration with a class statement, and call it with a value only"


def enum_base(probe: Any) -> type:
    """A base that is Python's `Enum` but for what the module keeps from the code; its
    refusals are on `probe`."""

    made: list[type] = []  # the base, once Python has made it (it sets its own attributes)

    class EnumType(enum.EnumType):
        @classmethod
        def __prepare__(metacls, cls: str, bases: tuple, **options: Any) -> Any:
            body = super().__prepare__(cls, bases, **options)
            body.__class__ = Namespace  # the same dict, reading tokens as Python's auto()
            return body

        def __call__(cls, *value: Any, **options: Any) -> Any:
            if len(value) > 1 or options:
                raise refusal(probe, f"{cls.__name__}() with more than a value", FIX)
            return super().__call__(*value)  # none: Python's own TypeError

        def __setattr__(cls, name: str, value: Any) -> None:
            if made and cls is made[0]:
                raise refusal(probe, f"enum.Enum.{name}", "set it on a class of the code's own",
                              done=ASSIGNED)  # fmt: skip
            super().__setattr__(name, value)

        def __delattr__(cls, name: str) -> None:
            if made and cls is made[0]:
                raise refusal(probe, f"enum.Enum.{name}", "nothing of the world is deleted",
                              done=DELETED)  # fmt: skip
            super().__delattr__(name)

    EnumType.__module__ = "enum"  # the type of a class, as Python's (refused either way)
    base = EnumType("Enum", (enum.Enum,), enum.EnumType.__prepare__("Enum", (enum.Enum,)))
    type.__setattr__(base, "__module__", "enum")
    type.__setattr__(base, "__qualname__", "Enum")
    made.append(base)
    return base


AUTO_FIX = "use auto() only as a member's value in an enumeration's class body"
_NAMESPACE = type(enum.EnumType.__prepare__("Enum", (enum.Enum,)))  # enum's class-body dict


def _token_class() -> tuple[type, dict[str, Any]]:
    """The class of what `auto()` gives the code, a stand-in of the world's (nothing of
    it is read, written or shown: `harness.engine.world.stand_in_class`), and its slots'
    descriptors: the arguments Python's `auto()` would hold, the probe its refusals are
    on, the call it was made in (`probe.call`, a dict each call starts afresh; a file's
    loading has its own), and whether a class body took it."""
    fields = ("args", "probe", "made_in", "taken")
    slots: dict[str, Any] = {}

    def refused(self: Any, what: str, done: str = READ) -> BaseException:
        return refusal(slots["probe"].__get__(self), what, AUTO_FIX, done)

    def __getattribute__(self: Any, attr: str) -> Any:
        if attr.startswith("__") and attr != "__mro_entries__":
            raise AttributeError(attr)  # Python's own lookups of special names find none
        raise refused(self, f"auto().{attr}")

    def __setattr__(self: Any, attr: str, value: Any) -> None:
        raise refused(self, f"auto().{attr}", ASSIGNED)

    def __repr__(self: Any) -> str:
        raise refused(self, "repr(auto())")

    def __set_name__(self: Any, owner: type, name: str) -> None:  # a class that is no Enum
        raise refused(self, f"auto() as {owner.__name__}.{name}")

    def __delattr__(self: Any, attr: str) -> None:
        raise refused(self, f"auto().{attr}", DELETED)

    methods = {"__getattribute__": __getattribute__, "__setattr__": __setattr__,
               "__delattr__": __delattr__, "__repr__": __repr__,
               "__set_name__": __set_name__}  # fmt: skip
    cls = stand_in_class("auto()", methods, None, fields)
    slots.update({field: vars(cls)[field] for field in fields})
    return cls, slots


Token, _SLOT = _token_class()


def _token(args: tuple, probe: Any) -> Any:
    token = object.__new__(Token)
    for field, value in (("args", args), ("probe", probe), ("made_in", probe.call),
                         ("taken", False)):  # fmt: skip
        _SLOT[field].__set__(token, value)
    return token


def _taken(token: Any) -> Any:
    """What Python's class body is handed for `token`: Python's `auto()` (or its value,
    as Python takes `auto(value)`); refused where a class body took it before, or it was
    made in another call (or as a file loaded): Python's `auto()` keeps the value it
    first got, which would then be state one call leaves the next."""
    probe = _SLOT["probe"].__get__(token)
    if _SLOT["taken"].__get__(token) or _SLOT["made_in"].__get__(token) is not probe.call:
        raise refusal(probe, "auto() given to a class body twice, or kept", AUTO_FIX)
    _SLOT["taken"].__set__(token, True)
    args = _SLOT["args"].__get__(token)
    return args[0] if args else enum.auto()


class Namespace(_NAMESPACE):
    """An enumeration's class body: Python's, but an `auto()` token (alone or in a plain
    tuple) becomes Python's `auto()` before Python's code takes it."""

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, _pythons(value))


def _pythons(value: Any) -> Any:
    if type(value) is Token:
        return _taken(value)
    if type(value) is tuple and any(type(item) is Token for item in value):
        return tuple(_pythons(item) for item in value)
    return value


def _auto(probe: Any) -> Any:
    def make(*args: Any) -> Token:
        enum.auto(*args)  # Python's TypeError for what its auto() refuses
        return _token(args, probe)

    return world_function("auto", make, probe)


@dataclass(frozen=True)
class Base(Spec):
    """`Enum` as a base of the code's classes (see the module)."""

    def compile(self, ctx: Context) -> Resolver:
        made = enum_base(ctx.probe)
        return lambda probe: made


@dataclass(frozen=True)
class Auto(Spec):
    """`auto()`: a token that an enumeration's class body makes Python's `auto()` of."""

    def compile(self, ctx: Context) -> Resolver:
        function = _auto(ctx.probe)
        return lambda probe: function


def names() -> dict[str, Spec]:
    """The world's names for `from enum import Enum, auto` and for `import enum` (whose
    other attributes are refused: `IntEnum`, `Flag`, ... are unbound, named as such)."""
    made: dict[str, Spec] = {"Enum": Shared("enum.Enum", Base()),
                             "auto": Shared("enum.auto", Auto())}  # fmt: skip
    return {**made, "enum": Obj("enum", made)}

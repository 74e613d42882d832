"""Python's `functools.lru_cache` and `functools.cache`, for a project's helpers.

A project's configuration code caches helpers (SGLang 0.5.18's `arg_utils.py`:
`@functools.lru_cache(maxsize=None)` on `resolvable_fields(cls)`). What such a
decorator makes is Python's own cache wrapper, so what the code sees of it is
Python's: equal keys (`1` and `1.0`) share an entry, a cached result is the
one object, an unhashable argument raises TypeError, `cache_info()` counts.
A cache is state that outlives a call, so a closure holding a cached function
is impure (`harness.engine.purity`): it runs on every cell, each in a fresh
copy of its modules, so a cache is filled by one cell only, as in SGLang's
process, which resolves one configuration. The decorator itself is a
stand-in (`world_function`); `functools`' other names are refused, but
`cached_property` (`CachedProperty`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from harness.engine.deferral import USES
from harness.engine.purity import CACHES
from harness.engine.world import Context, Obj, Resolver, Spec, stand_in_class, world_function

PROPERTY_FIX = (
    "an entry reads the configuration through the world's object, not through the class "
    "its module makes; a cached property of it is not read"
)


@dataclasses.dataclass(frozen=True)
class Cache(Spec):
    """`@lru_cache`, `@lru_cache(maxsize=..., typed=...)`, `@lru_cache(64)`, `@cache`:
    Python's, called as the code calls it (its own TypeError for what it refuses)."""

    name: str
    python: Callable[..., Any]

    def compile(self, ctx: Context) -> Resolver:
        probe, python, name = ctx.probe, self.python, self.name

        def decorate(*args: Any, **kwargs: Any) -> Any:
            made = python(*args, **kwargs)
            if args and callable(args[0]):
                return made  # Python's wrapper of the code's function
            return world_function(f"{name}()", made, probe)  # the decorator it returns

        function = world_function(name, decorate, probe)
        return lambda probe: function


@dataclasses.dataclass(frozen=True)
class CachedProperty(Spec):
    """`@functools.cached_property` on a method of a class a module of the project makes as
    it loads (SGLang 0.5.13's `ServerArgs.max_speculative_num_draft_tokens`). An entry
    reads the configuration through the world's object, never through the class its
    module makes, and such a method of the configuration's class is refused where an
    entry calls it (a decorated method: `harness.closure.resolve.method_kind`); so what
    the decorator makes here takes its name in the class, as Python's does
    (`__set_name__`), tells its class (`__class__`: a class that refuses making one,
    subclassing and testing against it), which a dataclass decorator asks of each class
    attribute, and refuses every other use."""

    def compile(self, ctx: Context) -> Resolver:
        probe = ctx.probe

        def used(self: Any, *args: Any, **kwargs: Any) -> Any:
            raise probe.refuse("a cached_property of a class the project makes", PROPERTY_FIX)

        names: dict[int, tuple[Any, Any]] = {}  # id -> (the object, the name it took)

        def named(self: Any, owner: Any, name: Any) -> None:  # Python's rule and message
            first = names.setdefault(id(self), (self, name))[1]
            if name != first:
                raise TypeError("Cannot assign the same cached_property to two different "
                                f"names ({first!r} and {name!r}).")  # fmt: skip

        def attribute(self: Any, name: str) -> Any:
            if name == "__class__":
                return kind
            return used(self)

        uses = {**dict.fromkeys(USES, used), "__set_name__": named,
                "__getattribute__": attribute}  # fmt: skip
        kind = stand_in_class("cached_property", uses, probe)

        def decorate(function: Any) -> Any:  # Python's too takes any object here
            return object.__new__(kind)

        function = world_function("cached_property", decorate, probe)
        return lambda probe: function


def names() -> dict[str, Spec]:
    """The world's names for `from functools import lru_cache, cache, cached_property` and
    for `import functools` (whose other attributes are refused)."""
    made: dict[str, Spec] = {name: Cache(name, getattr(functools, name)) for name in CACHES}
    made["cached_property"] = CachedProperty()
    return {**made, "functools": Obj("functools", made)}

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
stand-in (`world_function`); `functools`' other names are refused.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from harness.engine.purity import CACHES
from harness.engine.world import Context, Obj, Resolver, Spec, world_function


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


def names() -> dict[str, Spec]:
    """The world's names for `from functools import lru_cache, cache` and for `import
    functools` (whose other attributes are refused)."""
    made = {name: Cache(name, getattr(functools, name)) for name in CACHES}
    return {**made, "functools": Obj("functools", made)}

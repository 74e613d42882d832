"""Python's `functools.lru_cache` and `functools.cache`, for a project's pure helpers.

A project's configuration code caches helpers that read only their arguments
(SGLang 0.5.18's `arg_utils.py`: `@functools.lru_cache(maxsize=None)` on
`resolvable_fields(cls)`). In the harness a cached function runs its body at
every call: a cell's evaluation records what each call reads, and nothing one
cell computes can answer another's (a cache filled in one cell would hand the
next cell a value its own inputs never made). For a function of its
arguments that is the answer Python's cache gives, with one difference the
code could see: equal calls return equal values, not the one object, so code
that changes what a cached call returned and calls again sees the change
only in Python. The key Python's cache hashes is hashed here too, so an
unhashable argument raises Python's TypeError. What else Python's wrapper has
(`cache_info()`, `cache_clear()`, `__wrapped__`) is refused on the probe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.engine.world import Context, Obj, Resolver, Spec, world_function

MARK = object()  # between positional and keyword arguments in the key, as in Python's


def _wrapper(fn: Any, hashed: bool, probe: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        if hashed:
            hash((*args, MARK, *kwargs.items()))
        return fn(*args, **kwargs)

    return world_function("a cached function", call, probe)


@dataclass(frozen=True)
class Cache(Spec):
    """`@lru_cache`, `@lru_cache(maxsize=..., typed=...)` (`maxsize=0`: no key, as Python
    hashes none) and `@cache`."""

    name: str

    def compile(self, ctx: Context) -> Resolver:
        probe, bare = ctx.probe, self.name == "cache"

        def decorate(fn: Any = None, /, maxsize: Any = 128, typed: bool = False) -> Any:
            if callable(fn) or bare:
                return _wrapper(fn, True, probe)
            if fn is not None:  # `lru_cache(64)`: the size given positionally
                maxsize = fn
            return world_function("lru_cache()", lambda f: _wrapper(f, maxsize != 0, probe), probe)

        function = world_function(self.name, decorate, probe)
        return lambda probe: function


def names() -> dict[str, Spec]:
    """The world's names for `from functools import lru_cache, cache` and for `import
    functools` (whose other attributes are refused)."""
    made = {"lru_cache": Cache("lru_cache"), "cache": Cache("cache")}
    return {**made, "functools": Obj("functools", made)}

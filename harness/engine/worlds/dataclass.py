"""Python's `dataclasses.dataclass` and `field`, for the classes a project's code makes.

A project's configuration code is often a dataclass (SGLang 0.5.18's
`CudaGraphConfig` and its `PhaseConfig`s, built and filled in by
`__post_init__`). Such a class is made by Python's own decorator, so what it
does (its `__init__`, defaults, `default_factory`, `__eq__`, `frozen`) is
Python's. What differs is what the decorator reads: the harness never
evaluates an annotation (its names need no binding), so a dataclass body's
annotations reach the class as their source text (`harness.closure.names`),
and the decorator sees each as a plain field. Python treats three annotations
differently (`ClassVar`, `InitVar`, `KW_ONLY`): one of those is refused as the
class is made, rather than made into a field Python would not make. Every
annotation is then `None` in the class the code gets: it cannot read them
(`__annotations__` is a special name) and Python's decorator only asks them
for those three.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from harness.engine.policy import forbidden_attribute
from harness.engine.world import (
    Context,
    Function,
    Obj,
    Resolver,
    Spec,
    refusal,
    world_function,
)

SPECIAL = re.compile(r"\b(ClassVar|InitVar|KW_ONLY)\b")
FIX = "decorate only a class the code's own `class` statement makes, and declare its fields plainly"


def _made(cls: Any, options: dict[str, Any], probe: Any) -> Any:
    if type(cls) is not type:  # a function, a stand-in, a class of the world's
        raise refusal(probe, f"dataclass() of a {type(cls).__name__}", FIX)
    notes = vars(cls).get("__annotations__", {})
    for name, note in notes.items():
        if forbidden_attribute(name):  # `__match_args__` would hand it to `case K(x)`
            what = f"dataclass {cls.__qualname__}: field {name}"
            raise refusal(probe, what, "name the field as any attribute may be named")
        found = SPECIAL.search(note) if isinstance(note, str) else None
        if found:
            what = f"dataclass {cls.__qualname__}: field {name} annotated {found.group(1)}"
            raise refusal(probe, what, FIX + " (the harness never evaluates annotations)")
    notes.update(dict.fromkeys(notes))
    return dataclasses.dataclass(cls, **options)


@dataclass(frozen=True)
class Decorator(Spec):
    """`@dataclass` and `@dataclass(...)`, as Python's; what Python would make otherwise
    (of something not a class, or a field it treats specially) is refused on the probe."""

    def compile(self, ctx: Context) -> Resolver:
        probe = ctx.probe

        def decorate(cls: Any = None, /, **options: Any) -> Any:
            if cls is None:
                return world_function("dataclass()", lambda made: _made(made, options, probe))
            return _made(cls, options, probe)

        function = world_function("dataclass", decorate, probe)
        return lambda probe: function


def names_made() -> dict[str, Spec]:
    """`dataclass` and `field`, as the world answers them."""
    return {"dataclass": Decorator(), "field": Function("field", dataclasses.field)}


def names() -> dict[str, Spec]:
    """The world's names for `from dataclasses import dataclass, field` and for `import
    dataclasses` (whose other attributes are refused; an entry's answers `fields` and
    `is_dataclass` too: `harness.engine.worlds.records`)."""
    made = names_made()
    return {**made, "dataclasses": Obj("dataclasses", made)}

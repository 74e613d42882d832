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
from typing import Any

from harness.engine.world import Function, Obj, Spec, world_function

DECORATOR = "dataclass"  # the names a class body's decorator is read under
SPECIAL = re.compile(r"\b(ClassVar|InitVar|KW_ONLY)\b")


def _made(cls: Any, options: dict[str, Any]) -> Any:
    notes = vars(cls).get("__annotations__", {})
    for name, note in notes.items():
        found = SPECIAL.search(note) if isinstance(note, str) else None
        if found:
            raise TypeError(
                f"dataclass {cls.__qualname__}: field {name} is annotated {found.group(1)}, "
                "which the harness does not read (it never evaluates annotations): "
                "declare the field without it"
            )
    notes.update(dict.fromkeys(notes))
    return dataclasses.dataclass(cls, **options)


def dataclass(cls: Any = None, /, **options: Any) -> Any:
    """`@dataclass` and `@dataclass(...)`, as Python's."""
    if cls is None:
        return world_function("dataclass()", lambda made: _made(made, options))
    return _made(cls, options)


def names() -> dict[str, Spec]:
    """The world's names for `from dataclasses import dataclass, field` and for `import
    dataclasses` (whose other attributes are refused)."""
    made = {"dataclass": Function("dataclass", dataclass),
            "field": Function("field", dataclasses.field)}  # fmt: skip
    return {**made, "dataclasses": Obj("dataclasses", made)}

"""Worlds by name, as a matrix file's `world:` key names them."""

from __future__ import annotations

from harness.closure.facts import WorldFacts
from harness.engine.world import World, register_world
from harness.engine.worlds import caching, dataclass, enums, example, sglang
from harness.errors import HarnessError
from harness.matrix.model import Matrix

WORLDS: dict[str, World] = {
    # binds only Python's dataclasses, enums and caches: axes and fields are view attributes, and
    # what the code assigns to the view is what it declares (a project's `config.timeout = 5`)
    "plain": register_world(
        World(
            name="plain",
            names={**dataclass.names(), **enums.names(), **caching.names()},
            view_writes=True,
        )
    ),
    "sglang": register_world(sglang.WORLD),
    "example": register_world(example.WORLD),  # TinyServe, a made-up engine (see its module)
}


def facts_of(matrix: Matrix) -> WorldFacts:
    """How the project of the matrix's world lays out its code (its name, as reports say
    it: `facts_of(matrix).display`)."""
    return world_named(matrix.world, matrix.source).facts


def world_named(name: str, source: str) -> World:
    try:
        return WORLDS[name]
    except KeyError:
        known = ", ".join(sorted(WORLDS))
        raise HarnessError(f"{source}: world: unknown world {name!r} (known: {known})") from None

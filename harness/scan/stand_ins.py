"""Changed definitions the world stands for: what a diff cannot see because the world
answers it (see `harness.closure.homes`), said as blind spots.

A closure that imports `get_platform` from SGLang's `runtime_context.py` is
evaluated with the world's answer, never with that file's definition. When
the definition differs between the two revisions (a PR that makes
`is_sm100_supported` answer True everywhere), SGLang's behaviour may change
on every cell while the harness's outcomes cannot: the diff names it, and
"no change" becomes "cannot tell". A name the matrix binds under `bindings:`
is replaced on purpose and never compared.
"""

from __future__ import annotations

from typing import Any

from harness.closure.homes import HomeDefinition, home_definition, unchanged
from harness.errors import Unevaluable
from harness.scan.spots import BlindSpot

NEVER_RUN = "never run"  # a blind spot's `seen`: the world answers in its place


def changed_stand_ins(versions: Any, revisions: dict, codes: dict) -> list[BlindSpot]:
    """A blind spot for each world name either side's code imports from its SGLang home
    whose definition there differs between the revisions. A definition only one
    revision has is new (or gone) code whose meaning the world gives: nothing to
    compare it with."""
    keys = sorted(set().union(*(_homes(code) for code in codes.values())))
    if not keys:
        return []
    read = _read_by_world(versions)
    files = {side: versions.files_at(revisions[side]) for side in ("base", "head")}
    keys = [key for key in keys if not unchanged(files["base"], files["head"], *key)]
    found = {
        side: [_definition(versions, files[side], key, read) for key in keys]
        for side in ("base", "head")
    }
    spots = []
    for key, base, head in zip(keys, found["base"], found["head"], strict=True):
        unread = [(s, d) for s, d in (("base", base), ("head", head)) if isinstance(d, str)]
        if unread:
            spots.append(_unread(key, *unread[-1]))
        elif base is not None and head is not None and _differs(base, head):
            spots.append(_spot(base, head, versions.matrix.edit_hint))
    return spots


def _definition(versions: Any, files: Any, key: tuple[str, str], read: frozenset[str]):
    """The home definition, None where the revision has none, or why it cannot be read."""
    try:
        return home_definition(versions.sources, files, *key, read=read)
    except Unevaluable as exc:  # a home file past the bounds on parsing
        return str(exc)


def _unread(key: tuple[str, str], side: str, reason: str) -> BlindSpot:
    name, path = key
    hint = f"SGLang's definition of {name} could not be read to compare it: {reason}"
    return BlindSpot(side, path, 1, f"the definition of {name}", name, NEVER_RUN, hint)


def _homes(code: Any) -> set[tuple[str, str]]:
    """(name, home) pairs a side's closure (or each pass of its pipeline) imports."""
    if code is None:
        return set()
    target = code.closure
    passes = getattr(target, "passes", None)
    closures = [target] if passes is None else [c for _, c in passes if c is not None]
    return {home for closure in closures for home in closure.homes}


def _read_by_world(versions: Any) -> frozenset[str]:
    defaults = versions.world.input_defaults
    return frozenset() if defaults is None else frozenset({defaults[1]})


def _differs(base: HomeDefinition, head: HomeDefinition) -> bool:
    digests = [[p.digest for p in side.pieces] for side in (base, head)]
    return base.path != head.path or digests[0] != digests[1]


def _spot(base: HomeDefinition, head: HomeDefinition, matrix: str) -> BlindSpot:
    """The first statement of the definition that differs: the head's, unless the head
    only lacks some of the base's."""
    added = head.changed(base)
    side, shown = ("head", head) if added else ("base", base)
    piece = added or base.changed(head) or base.pieces[0]  # else only moved
    name = shown.name
    hint = (
        f"SGLang's definition of {name} (with what it reads in {shown.path}) changed "
        f"between the revisions, and the world answers {name} in its place, so a change in "
        f"what it returns would not show: review it, or bind {name} under `bindings:` in "
        f"{matrix} to take it from the matrix on purpose"
    )
    return BlindSpot(side, shown.path, piece.line, piece.text, name, NEVER_RUN, hint)

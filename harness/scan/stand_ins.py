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

from harness.closure.homes import HomeDefinition, Unsure, home_definition, nothing_else_changed
from harness.errors import Unevaluable
from harness.gitio import RELEASE, WORKING_TREE, changed_files, changed_in_worktree
from harness.scan.spots import NEVER_RUN, BlindSpot


def changed_stand_ins(versions: Any, revisions: dict, closures: dict) -> list[BlindSpot]:
    """A blind spot for each world name either side's code imports from its SGLang home
    whose definition there differs between the revisions, or cannot be read to compare
    (`Unsure`), or cannot be found where a side's own code imports it from. A definition
    only the other revision has is new (or gone) code whose meaning the world gives:
    nothing to compare it with."""
    homes = {side: {h for c in found for h in c.homes} for side, found in closures.items()}
    keys = sorted(homes["base"] | homes["head"])
    if not keys or _nothing_else_changed(versions, revisions):
        return []
    read = _read_by_world(versions)
    files = {side: versions.files_at(revisions[side]) for side in ("base", "head")}
    spots = []
    for key in keys:
        found = {side: _definition(versions, revisions[side], files[side], key, read)
                 for side in files}  # fmt: skip
        spot = _judged(key, found, homes, versions.matrix.edit_hint, versions.world.facts.display)
        if spot is not None:
            spots.append(spot)
    return spots


def _judged(
    key: tuple[str, str], found: dict, homes: dict, matrix: str, project: str
) -> BlindSpot | None:
    """The blind spot one definition makes, if any (`project`: whose definition it is)."""
    for side in ("head", "base"):
        if isinstance(found[side], Unsure):
            return _unread(key, side, found[side].reason, project)
        if found[side] is None and key in homes[side]:  # its code imports it from there
            why = f"no definition of {key[0]} is found in {key[1]}"
            return _unread(key, side, why, project)
    base, head = found["base"], found["head"]
    if base is not None and head is not None and _differs(base, head):
        return _spot(base, head, matrix, project)
    return None


def _nothing_else_changed(versions: Any, revisions: dict) -> bool:
    """Whether only the target's file (or no Python) differs between the revisions, as git
    lists them (see `changed_paths`): then no definition the world answers does (its
    homes are other files), and none is parsed."""
    changed = changed_paths(versions, revisions)
    target = {versions.matrix.target.path}  # the passes' own file: what a PR edits most
    return changed is not None and nothing_else_changed(changed, target)


def changed_paths(versions: Any, revisions: dict) -> list[str] | None:
    """The paths that differ between two commits, or a commit and the working tree, asked
    of git once per run (the parts of a split inferred diff ask it each); None when a
    side is a release (nothing lists what differs) or both are the working tree."""
    base, head = (revisions[side].sha for side in ("base", "head"))
    kinds = {revisions[side].kind for side in ("base", "head")}
    if RELEASE in kinds or kinds == {WORKING_TREE}:
        return None
    memo, at = versions.front.sources.homes, ("changed files", base, head)
    if at not in memo:
        if base is None or head is None:
            memo[at] = changed_in_worktree(versions.repo, base or head)
        else:
            memo[at] = changed_files(versions.repo, base, head)
    return memo[at]


def _definition(versions: Any, revision: Any, files: Any, key: tuple[str, str], read):
    """The home definition, None where the revision has none, or Unsure: read once per
    revision and name in a run (the parts of a split inferred diff share it)."""
    memo = versions.front.sources.homes
    at = (revision.sha or revision.label, key, read)
    if at not in memo:
        try:
            memo[at] = home_definition(versions.front.sources, files, *key, read=read)
        except Unevaluable as exc:  # a home file past the bounds on parsing
            memo[at] = Unsure(key[1], str(exc))
    return memo[at]


def _unread(key: tuple[str, str], side: str, reason: str, project: str) -> BlindSpot:
    name, path = key
    hint = f"{project}'s definition of {name} could not be read to compare it: {reason}"
    return BlindSpot(side, path, 1, f"the definition of {name}", name, NEVER_RUN, hint)


def _read_by_world(versions: Any) -> frozenset[str]:
    defaults = versions.world.facts.input_defaults
    return frozenset() if defaults is None else frozenset({defaults[1]})


def _differs(base: HomeDefinition, head: HomeDefinition) -> bool:
    digests = [[p.digest for p in side.pieces] for side in (base, head)]
    return base.path != head.path or digests[0] != digests[1]


def _spot(base: HomeDefinition, head: HomeDefinition, matrix: str, project: str) -> BlindSpot:
    """The first statement of the definition that differs: the head's, unless the head
    only lacks some of the base's."""
    added = head.changed(base)
    side, shown = ("head", head) if added else ("base", base)
    piece = added or base.changed(head) or base.pieces[0]  # else only moved
    name = shown.name
    hint = (
        f"{project}'s definition of {name} (with what it reads) changed "
        f"between the revisions, and the world answers {name} in its place, so a change in "
        f"what it returns would not show: review it, or bind {name} under `bindings:` in "
        f"{matrix} to take it from the matrix on purpose"
    )
    return BlindSpot(side, piece.path, piece.line, piece.text, name, NEVER_RUN, hint)

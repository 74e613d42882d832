"""The diff flow: two revisions -> their states -> the comparison and why rules changed."""

from __future__ import annotations

import operator
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.engine.branches import closures_of
from harness.engine.outcome import ABSENT, CODE_TYPE
from harness.gitio import Revision
from harness.matrix.model import Matrix
from harness.scan.because import Reasons, start_explaining
from harness.scan.blind import BlindSpot, Side, both_definitions, start_finding
from harness.scan.compare import Comparison, compare
from harness.scan.stand_ins import changed_stand_ins
from harness.scan.tables import Pending, State
from harness.scan.unrun import unrun_changes
from harness.scan.versions import Versions


@dataclass
class Diff:
    """Two revisions' states, the cells whose outcomes differ, and per rule why."""

    matrix: Matrix
    base: Revision
    head: Revision
    states: dict[str, State]  # "base", "head"
    comparison: Comparison
    because: list[Reasons]  # per rule of the comparison
    blind: list[BlindSpot] = field(default_factory=list)  # changed code the matrix missed
    unseen: str | None = None  # why coverage could not be read, when it could not


def diff(
    versions: Versions,
    base: Revision,
    head: Revision,
    where: tuple[int, ...] | None = None,
    started: list | None = None,
) -> Diff:
    """Evaluate both revisions over the matrix (or find them cached) and compare. When a
    side cannot be told (see `comparable`), nothing is compared: no cell is listed.
    `started`: `versions.start` of BASE and HEAD, when the caller started them early."""
    return start_diff(versions, base, head, where, started)()


def start_diff(
    versions: Versions,
    base: Revision,
    head: Revision,
    where: tuple[int, ...] | None = None,
    started: list | None = None,
    batches: dict | None = None,
) -> Callable[[], Diff]:
    """`diff`, up to the comparison, with its traces and blind-spot searches started in
    workers: calling the answer waits for them. Several diffs started one after the
    other keep the workers busy while the parent compares the next. `batches`: per
    side, a batch of that revision's jobs its searches join, and under "traces" one its
    traces join (each trace job holds both revisions' code already)."""
    matrix, revisions = versions.matrix, {"base": base, "head": head}
    plans = started or [versions.start(r) for r in (base, head)]
    early = _read_stand_ins(versions, revisions, plans)  # while the evaluations run
    states = dict(zip(("base", "head"), map(versions.settle, plans), strict=True))
    if not comparable(states["base"], states["head"]):
        return lambda: Diff(matrix, base, head, states, nothing_compared(), [])
    codes = _codes(versions, revisions, states)
    sides = _sides(versions, revisions, states, codes)
    defs = both_definitions(*sides)  # read once: blind spots and reasons compare them
    finding = start_finding(matrix, *sides, versions.limits, defs, versions.front.sources.sited,
                            batches)  # fmt: skip
    comparison = compare(matrix, states["base"].table, states["head"].table, where)
    explaining = start_explaining(versions, codes["base"], codes["head"], comparison.rules, defs,
                                  (batches or {}).get("traces"))  # fmt: skip

    def finished() -> Diff:
        because = explaining()
        blind, unseen = finding()
        closures = _closures(codes)
        blind += early[1] if _same(early[0], closures) else never_run(versions, revisions, closures)
        return Diff(matrix, base, head, states, comparison, because, blind, unseen)

    return finished


def blind_spots(versions: Versions, base: Revision, head: Revision, found=None):
    """(blind spots, why coverage could not be read) of BASE against HEAD, without the
    comparison (the pytest entry compares with a baseline file of its own); none when a
    side cannot be told (that is said where the outcomes are). `found`: the two states,
    when the caller has them."""
    found = found or versions.at_all([base, head])
    states = dict(zip(("base", "head"), found, strict=True))
    if not comparable(states["base"], states["head"]):
        return [], None
    revisions = {"base": base, "head": head}
    codes = _codes(versions, revisions, states)
    blind, unseen = start_finding(versions.matrix, *_sides(versions, revisions, states, codes),
                                  versions.limits)()  # fmt: skip
    return blind + never_run(versions, revisions, _closures(codes)), unseen


def never_run(versions: Versions, revisions: dict, closures: dict) -> list:
    """Changed code the harness does not run for these closures: SGLang's definitions the
    world answers (`harness.scan.stand_ins`), module-level code (`harness.scan.unrun`)."""
    return changed_stand_ins(versions, revisions, closures) + unrun_changes(
        versions, revisions, closures
    )


def _read_stand_ins(versions: Versions, revisions: dict, plans: list) -> tuple[dict, list]:
    """Read SGLang's definitions of the world's names the planned code imports, and the
    module-level code around it, before waiting for its evaluations: they need no
    outcome, and a run reads each once (see `never_run`), so `finished` finds them read.
    Which ones it judges is still decided by the settled states (a side that fails to
    run has no code): the answer is (the closures judged, the spots), so that the same
    closures are not judged twice."""
    codes = {side: (p.state if isinstance(p, Pending) else p).code
             for side, p in zip(("base", "head"), plans, strict=True)}  # fmt: skip
    closures = _closures(codes)
    return closures, never_run(versions, revisions, closures)


def _same(judged: dict, closures: dict) -> bool:
    """Whether each side's closures are the very objects judged already."""
    return all(
        len(judged[side]) == len(found) and all(map(operator.is_, judged[side], found))
        for side, found in closures.items()
    )


def _closures(codes: dict) -> dict:
    """Each side's closures (each pass's, for a pipeline); none where it cannot run."""
    return {side: [] if code is None else closures_of(code.closure) for side, code in codes.items()}


def _codes(versions: Versions, revisions: dict, states: dict) -> dict:
    """Each side's code (None where it cannot run): what traces and searches run."""
    return {side: versions.code_for(states[side], rev.label) for side, rev in revisions.items()}


def _sides(versions: Versions, revisions: dict, states: dict, codes: dict) -> list[Side]:
    """Base and head as blind spots read them: code, coverage and text."""
    return [_side(versions, s, revisions[s], states[s], codes[s]) for s in ("base", "head")]


def comparable(base: State, head: State) -> bool:
    """Whether comparing the two tables says something: both evaluated, or a base without
    the target against an evaluable head (everything the head does is new). A side that
    could not be evaluated, or a head without the target, cannot be told apart from a
    change."""
    if not head.evaluable:
        return False
    return base.evaluable or base.table.outcomes[0].kind == ABSENT


def nothing_compared() -> Comparison:
    return Comparison([], array("L"), array(CODE_TYPE), array(CODE_TYPE), [])


def _side(versions: Versions, name: str, revision: Revision, state: State, code) -> Side:
    files = versions.files_at(revision)
    target = code.closure if code is not None and state.evaluable else None
    table = state.table
    return Side(name, target, table.branches, table.reached, files.read, revision.label)

"""`--matrix inferred`: the matrices a diff of two revisions needs, built from their code.

No matrix file is read but the shipped whole-resolution one, for the target
file, the world, and the model its cells stand for (its bindings, and its
fields no axis names). The target is every registered pass whose closure
differs between the two revisions (a pass at one side only counts), plus each
pass after one of them in run order that reads a field it declares. The axes
are every input those passes compare with literals at either revision (null,
every literal and its neighbours, and one value none of them names), each
boolean they test, and the world's suggested values for its own inputs they
read (the GPU, MLA, the CUDA-graph modes); every other input they read is a
field at the default the view's class declares at the head
(`harness.scan.infer` finds them, running each pass on symbols in a worker, at
both revisions). A pass that reads nothing the other passes declare is still
run in run order with the chosen ones: its inputs are the axes, which stand in
for whatever runs before it.

When that one matrix has more cells than --max-cells (a refactor touches most
passes, and the product of their inputs' classes is astronomical), each pass
whose code or read default changed is diffed alone, on a matrix of the inputs
it reads: a field another pass declares is then an input like any other, so a
change of the pass on any input is found, reachable through the passes before
it or not. Each matrix runs its passes in the head's order at both revisions:
two passes that swapped places, one declaring what the other reads or
declares, are named as not evaluated (`unseen`), never passed over. When
several passes changed, the parts are made first: when their own inputs
already make more than --max-cells, the one matrix (which has them all) is
never built.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace

from harness import gitio
from harness.closure.modules import RevisionFiles
from harness.closure.survey import PassSurvey
from harness.engine.world import World
from harness.errors import Absent, CannotTell, Unevaluable
from harness.matrix.model import Axis, Matrix
from harness.scan.diff import never_run
from harness.scan.infer import (
    Found,
    base_matrix,
    layout,
    merged,
    start_discoveries,
    start_discovery,
)
from harness.scan.versions import Versions

INFERRED = "inferred"
RUNS = 60  # runs on symbols per pass: every platform the world tells apart is tried


@dataclass(frozen=True)
class Inferred:
    """The matrices a diff of two revisions needs: one over every chosen pass when it fits
    under --max-cells, else one per pass whose code or read default changed (`whole`: the
    cells the one matrix would have had); and the run-order changes no matrix evaluates."""

    matrices: tuple[Matrix, ...]
    whole: int = 0  # > 0: split, one matrix per changed pass; the one matrix's cells, at least
    unseen: tuple[str, ...] = ()


def inferred_matrix(
    versions: Versions, base: gitio.Revision, head: gitio.Revision, max_cells: int
) -> Inferred | None:
    """The matrices for BASE against HEAD; None when no pass's code, place in the run order
    or read default differs between them."""
    sides = [versions.files_at(revision) for revision in (base, head)]
    surveys = [_surveys(versions, files) for files in sides]
    if not any(surveys):
        raise CannotTell(
            f"--matrix inferred: no registered pass to compare in {versions.matrix.target.path} "
            f"at either revision ({_why_none(versions, sides[0])}; {_why_none(versions, sides[1])})"
        )
    orders = [_in_order(versions, f, own, surveys) for f, own in zip(sides, surveys, strict=True)]
    moved = _moved(*orders)
    defaults = _changed_defaults(
        versions.front.defaults(sides[0]), versions.front.defaults(sides[1])
    )
    differ = [
        n for n in _names(*surveys)
        if _digest(surveys[0], n) != _digest(surveys[1], n)
        or defaults & {r for s in surveys if n in s for r in s[n].reads}
    ]  # fmt: skip
    changed = [n for n in _names(*surveys) if n in differ or n in moved]
    if not changed:
        _stand_ins_unchanged(versions, base, head, surveys)
        return None
    unseen = _swaps(orders, surveys)
    chosen = _with_readers(orders[1], changed, surveys)
    parts = _parts(versions, sides, surveys, differ) if len(differ) > 1 else None
    at_least = _at_least(parts, surveys, chosen) if parts else 0
    if at_least <= max_cells:  # else the one matrix is too large without making it
        whole = _inferred(versions, sides, surveys, chosen)
        if whole.size <= max_cells:
            return Inferred((whole,), unseen=unseen)
        at_least = whole.size
    parts = parts or _parts(versions, sides, surveys, differ)
    too_large = tuple(_too_large(p, max_cells) for p in parts if p.size > max_cells)
    kept = tuple(p for p in parts if p.size <= max_cells)
    return Inferred(kept, at_least, unseen + too_large)


def _parts(versions: Versions, sides: list, surveys: list, differ: list[str]) -> list[Matrix]:
    """One matrix per pass whose code or read default changed, on the inputs it reads."""
    found = _each_discovered(versions, surveys, differ)
    return [_inferred(versions, sides, surveys, [n], f"{INFERRED}:{n}", found[n]) for n in differ]


def _at_least(parts: list[Matrix], surveys: list, chosen: list[str]) -> int:
    """Cells the one matrix of the chosen passes has at least: each input of a part that no
    chosen pass declares is an input of the one matrix too, with every class any part
    found for it (the one matrix runs the same comparisons, and more)."""
    declared = {f for s in surveys for n in chosen if n in s for f in s[n].declares}
    classes: dict[str, int] = {}
    for part in parts:
        for axis in part.axes:
            if axis.name not in declared:
                classes[axis.name] = max(classes.get(axis.name, 0), len(axis.values))
    return math.prod(classes.values())


def _stand_ins_unchanged(versions: Versions, base, head, surveys: list) -> None:
    """No pass changed: nothing changed unless code the harness does not run for them did
    (SGLang's own definition of a name the world answers, module-level code: see
    `harness.scan.diff.never_run`); then CannotTell, naming it."""
    closures = {side: [s.closure for s in found.values() if s.closure is not None]
                for side, found in zip(("base", "head"), surveys, strict=True)}  # fmt: skip
    spots = never_run(versions, {"base": base, "head": head}, closures)
    if spots:
        first = spots[0]
        raise CannotTell(
            f"no registered pass's code, run order or declared defaults differ, but "
            f"{len(spots)} piece(s) of code harness does not run for them did: "
            f"{first.side} {first.where()} ({first.function}): {first.hint}"
        )


def _inferred(versions: Versions, sides: list, surveys: list, chosen: list[str],
              name: str = INFERRED, found: Found | None = None) -> Matrix:  # fmt: skip
    """The matrix of the chosen passes, run in that order: their inputs' classes as axes
    (what their runs on symbols found, run now unless `found` is given)."""
    outputs = _outputs(versions, surveys, chosen)
    if found is None:
        running = [_discovering(versions, s, chosen, outputs) for s in surveys]  # side by side
        found = merged(*(_discovered(closures, run) for closures, run in running))
    axes, fields = layout(
        versions.world, found, versions.front.defaults(sides[1]), outputs, every=True
    )
    return _matrix(versions.matrix, versions.world, name, chosen, outputs, axes,
                   {k: v for k, (v, _) in fields.items()})  # fmt: skip


def _surveys(versions: Versions, files: RevisionFiles) -> dict[str, PassSurvey]:
    """Each registered pass at one revision, surveyed (none when the file is absent)."""
    try:
        names = versions.front.registered(files)
    except (Absent, Unevaluable):
        return {}
    return {n: versions.front.survey(files, n) for n in names}


def _names(*surveys: dict[str, PassSurvey]) -> list[str]:
    return list(dict.fromkeys(n for s in surveys for n in s))


def _digest(surveys: dict[str, PassSurvey], name: str) -> str | None:
    """The pass's code as far as it could be read (a blocked pass whose code changed
    differs too: it is diffed, and says what blocks it)."""
    found = surveys.get(name)
    if found is None:
        return None
    if found.closure is None:
        return "blocked:" + "; ".join(reason for _, reason in found.blocked_by) + found.digest
    return found.closure.digest


def _why_none(versions: Versions, files: RevisionFiles) -> str:
    """Why one revision has no registered pass: the file is absent, does not parse, or
    registers none."""
    try:
        versions.front.registered(files)
    except (Absent, Unevaluable) as exc:
        return str(exc)
    return f"no function is registered in {files.target}"


def _in_order(versions: Versions, files: RevisionFiles, own: dict, surveys: list) -> list[str]:
    """Every pass, in one revision's run order (file order where none is found), then
    those only the other revision has."""
    names = list(own)
    if names:
        order = versions.front.run_order(files, tuple(names))
        names = list(order.passes) if order.entry else names
    return names + [n for s in surveys for n in s if n not in names]


def _moved(base: list[str], head: list[str]) -> set[str]:
    """The passes present at both revisions that run at another place among them."""
    common = [n for n in base if n in head]
    after = [n for n in head if n in base]
    return {a for a, b in zip(common, after, strict=True) if a != b}


def _changed_defaults(base, head) -> set[str]:
    """The fields whose declared default differs between the two revisions."""
    names = set(base.fields) | set(head.fields)
    return {n for n in names if _declared(base, n) != _declared(head, n)}


def _declared(defaults, name: str):
    found = defaults.fields.get(name)
    return None if found is None else (repr(found.value), found.refusal)


def _with_readers(order: list[str], changed: list[str], surveys: list) -> list[str]:
    """The changed passes and, after each, the passes that read a field it declares."""
    chosen, declared = [], set()
    for name in order:
        reads = {r for s in surveys if name in s for r in s[name].reads}
        if name in changed or reads & declared:
            chosen.append(name)
            declared |= {f for s in surveys if name in s for f in s[name].declares}
    return chosen


def _outputs(versions: Versions, surveys: list, chosen: list[str]) -> tuple[str, ...]:
    """The fields the chosen passes declare at either revision (else the template's)."""
    outputs = tuple(dict.fromkeys(f for s in surveys for n in chosen if n in s
                                  for f in s[n].declares))  # fmt: skip
    return outputs or versions.matrix.target.outputs


def _discovering(versions: Versions, surveys: dict, chosen: list[str], outputs):
    """(the chosen passes' closures at one side, their discovery started in a worker)."""
    job = _discovery(versions, surveys, chosen, outputs)
    if job is None:
        return [], None
    base, closures = job
    return closures, start_discovery(versions.world, base, closures, versions.limits, RUNS)


def _discovery(versions: Versions, surveys: dict, chosen: list[str], outputs):
    """(the base matrix, the chosen passes' closures) a discovery at one side runs; None
    when no chosen pass has a closure there."""
    closures = [(n, surveys[n].closure) for n in chosen if n in surveys and surveys[n].closure]
    if not closures:
        return None
    path = versions.matrix.target.path
    return base_matrix(versions.world, path, chosen, outputs, every=True), closures


def _each_discovered(versions: Versions, surveys: list, names: list[str]) -> dict[str, Found]:
    """What the runs on symbols find for each pass alone (as `_inferred` would for
    `[name]`), each side's passes in one worker, the two sides side by side; where a
    side's batch overran, each of its passes runs alone, under its own limits."""
    outputs = {n: _outputs(versions, surveys, [n]) for n in names}
    jobs = [
        {n: job for n in names if (job := _discovery(versions, s, [n], outputs[n]))}
        for s in surveys
    ]
    world, limits = versions.world, versions.limits
    running = [start_discoveries(world, list(j.values()), limits, RUNS) if j else None
               for j in jobs]  # fmt: skip
    per_side = [_batch(versions, j, run) for j, run in zip(jobs, running, strict=True)]
    return {n: merged(*(side.get(n, Found()) for side in per_side)) for n in names}


def _batch(versions: Versions, jobs: dict, running) -> dict[str, Found]:
    """Each pass's Found from one side's batch, or from runs of each alone if it overran."""
    if running is None:
        return {}
    try:
        return dict(zip(jobs, running.result(), strict=True))
    except Unevaluable:
        world, limits = versions.world, versions.limits
        alone = {n: (closures, start_discovery(world, base, closures, limits, RUNS))
                 for n, (base, closures) in jobs.items()}  # fmt: skip
        return {n: _discovered(closures, run) for n, (closures, run) in alone.items()}


def _discovered(closures: list, running) -> Found:
    if running is None:
        return Found()
    try:
        return running.result()
    except Unevaluable as exc:  # the runs on symbols overran: the diff says what cannot run
        return Found(problems={closures[0][0]: str(exc)})


def _matrix(template: Matrix, world: World, name: str, chosen: list[str], outputs, axes: dict,
            fields: dict) -> Matrix:  # fmt: skip
    """The matrix: the template's bindings and its fields (the model the cells stand for)
    where no axis or inferred field names them, and each of the world's own inputs that the
    runs on symbols did not reach at its first suggested value (code they did not reach
    may read it: so it runs, and a condition on it not taken both ways is a blind spot)."""
    target = replace(template.target, passes=tuple(chosen), outputs=tuple(outputs), guards=())
    given = {**{n: v[0] for n, v in world.suggested.items()}, **template.fields}
    kept = {k: v for k, v in given.items() if k not in axes and k not in fields}
    matrix = Matrix(
        name, "a matrix file (--matrix inferred has none: harness matrix --infer writes "
        "one to edit)", target, template.world,
        tuple(Axis(n, tuple(v)) for n, v in axes.items()), {**kept, **fields},
        dict(template.bindings), description="inferred from the code of both revisions",
    )  # fmt: skip
    if matrix.size > 10**15:  # no digest of a matrix that is only ever refused
        return matrix
    text = repr((name, target, [(a.name, a.values) for a in matrix.axes],
                 sorted(matrix.fields.items()), sorted(matrix.bindings.items())))  # fmt: skip
    return replace(matrix, digest=hashlib.sha256(text.encode()).hexdigest())


def _too_large(matrix: Matrix, max_cells: int) -> str:
    """Why a part is not diffed: its own inputs make too many cells."""
    sizes = ", ".join(f"{a.name} {len(a.values)}" for a in matrix.axes)
    (name,) = matrix.target.passes
    return (
        f"the pass {name} reads inputs whose classes make {matrix.size:,} cells, more than "
        f"--max-cells {max_cells:,} ({sizes}): diff it with a matrix file (harness matrix "
        f"--infer REV --passes {name} writes one), or raise --max-cells"
    )


def _swaps(orders: list[list[str]], surveys: list) -> tuple[str, ...]:
    """The pairs of passes present at both revisions that run in the other order at the
    head, one declaring a field the other reads or declares: what the order changes is not
    evaluated (each matrix runs its passes in the head's order at both revisions)."""
    base = {n: i for i, n in enumerate(orders[0])}
    common = [n for n in orders[1] if n in base and all(n in s for s in surveys)]
    touched = {n: _touched(n, surveys) for n in common}
    found = []
    for i, first in enumerate(common):
        for second in common[i + 1 :]:
            if base[first] < base[second]:
                continue  # the same order at both revisions
            shared = _conflict(touched[first], touched[second])
            if shared:
                found.append(
                    f"{second} ran before {first} at the base and after it at the head; both "
                    f"touch {', '.join(shared)}: the effect of their order is not evaluated"
                )
    return tuple(found)


def _touched(name: str, surveys: list) -> tuple[set[str], set[str]]:
    """(the fields a pass reads, those it declares) at either revision."""
    reads = {r for s in surveys for r in s[name].reads}
    return reads, {d for s in surveys for d in s[name].declares}


def _conflict(first: tuple[set[str], set[str]], second: tuple[set[str], set[str]]) -> list[str]:
    """The fields one of two passes ((reads, declares) each) declares and the other reads
    or declares."""
    (reads, declares), (other_reads, other_declares) = first, second
    return sorted(declares & (other_reads | other_declares) | other_declares & reads)

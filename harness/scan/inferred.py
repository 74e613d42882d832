"""`--matrix inferred`: the matrix a diff of two revisions needs, built from their code.

No matrix file is read but the default one (for the target file and the
world). The target is every registered pass whose closure differs between the
two revisions (a pass at one side only counts), plus each pass after one of
them in run order that reads a field it declares. The axes are every input
those passes compare with literals at either revision (null, every literal and
its neighbours, and one value none of them names), each boolean they test, and
the world's suggested values for its own inputs they read (the GPU, MLA, the
CUDA-graph modes); every other input they read is a field at the default the
view's class declares at the head (`harness.scan.infer` finds them, running
each pass on symbols in a worker, at both revisions). A pass that reads
nothing the other passes declare is still run in run order with the chosen
ones: its inputs are the axes, which stand in for whatever runs before it.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from harness import gitio
from harness.closure.modules import RevisionFiles
from harness.closure.survey import PassSurvey, registered, survey_pass
from harness.errors import Absent, CannotTell, Unevaluable
from harness.matrix.model import Axis, Matrix
from harness.scan.infer import Found, base_matrix, layout, merged, start_discovery
from harness.scan.versions import Versions

INFERRED = "inferred"
RUNS = 60  # runs on symbols per pass: every platform the world tells apart is tried


def inferred_matrix(
    versions: Versions, base: gitio.Revision, head: gitio.Revision, max_cells: int
) -> Matrix | None:
    """The matrix for BASE against HEAD; None when no pass's code, place in the run order
    or read default differs between them."""
    sides = [versions.files_at(revision) for revision in (base, head)]
    surveys = [_surveys(versions, files) for files in sides]
    orders = [_in_order(versions, f, own, surveys) for f, own in zip(sides, surveys, strict=True)]
    moved = _moved(*orders)
    defaults = _changed_defaults(versions.defaults(sides[0]), versions.defaults(sides[1]))
    changed = [
        n for n in _names(*surveys)
        if _digest(surveys[0], n) != _digest(surveys[1], n) or n in moved
        or defaults & {r for s in surveys if n in s for r in s[n].reads}
    ]  # fmt: skip
    if not changed:
        return None
    chosen = _with_readers(orders[1], changed, surveys)
    outputs = tuple(dict.fromkeys(f for s in surveys for n in chosen if n in s
                                  for f in s[n].declares))  # fmt: skip
    outputs = outputs or versions.matrix.target.outputs
    running = [_discovering(versions, s, chosen, outputs) for s in surveys]  # side by side
    found = merged(*(_discovered(closures, run) for closures, run in running))
    axes, fields = layout(versions.world, found, versions.defaults(sides[1]), outputs, every=True)
    return _matrix(versions.matrix, chosen, outputs, axes, {k: v for k, (v, _) in fields.items()},
                   max_cells)  # fmt: skip


def _surveys(versions: Versions, files: RevisionFiles) -> dict[str, PassSurvey]:
    """Each registered pass at one revision, surveyed (none when the file is absent)."""
    try:
        names = registered(versions.sources, files)
    except (Absent, Unevaluable):
        return {}
    bound, hint = versions.bound.names, versions.matrix.edit_hint
    return {n: survey_pass(versions.sources, files, n, bound, hint, versions.view) for n in names}


def _names(*surveys: dict[str, PassSurvey]) -> list[str]:
    return list(dict.fromkeys(n for s in surveys for n in s))


def _digest(surveys: dict[str, PassSurvey], name: str) -> str | None:
    found = surveys.get(name)
    if found is None:
        return None
    if found.closure is None:
        return "blocked:" + "; ".join(reason for _, reason in found.blocked_by)
    return found.closure.digest


def _in_order(versions: Versions, files: RevisionFiles, own: dict, surveys: list) -> list[str]:
    """Every pass, in one revision's run order (file order where none is found), then
    those only the other revision has."""
    names = list(own)
    if names:
        order = versions.run_order(files, tuple(names))
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


def _discovering(versions: Versions, surveys: dict, chosen: list[str], outputs):
    """(the chosen passes' closures at one side, their discovery started in a worker)."""
    closures = [(n, surveys[n].closure) for n in chosen if n in surveys and surveys[n].closure]
    if not closures:
        return closures, None
    world, path = versions.world, versions.matrix.target.path
    base = base_matrix(world, path, chosen, outputs, every=True)
    return closures, start_discovery(world, base, closures, versions.limits, RUNS)


def _discovered(closures: list, running) -> Found:
    if running is None:
        return Found()
    try:
        return running.result()
    except Unevaluable as exc:  # the runs on symbols overran: the diff says what cannot run
        return Found(problems={closures[0][0]: str(exc)})


def _matrix(template: Matrix, chosen: list[str], outputs, axes: dict, fields: dict,
            max_cells: int) -> Matrix:  # fmt: skip
    target = replace(template.target, passes=tuple(chosen), outputs=tuple(outputs), guards=())
    matrix = Matrix(
        INFERRED, "a matrix file (--matrix inferred has none: harness matrix --infer writes "
        "one to edit)", target, template.world,
        tuple(Axis(n, tuple(v)) for n, v in axes.items()), fields,
        description="inferred from the code of both revisions",
    )  # fmt: skip
    if matrix.size > max_cells:
        sizes = ", ".join(f"{a.name} {len(a.values)}" for a in matrix.axes)
        raise CannotTell(
            f"--matrix inferred: the {len(chosen)} passes that changed or read what changed "
            f"({_listed(chosen)}) read inputs whose classes make {matrix.size:,} cells, more "
            f"than --max-cells {max_cells:,} ({sizes}); diff them with a matrix file (harness "
            "matrix --infer writes a start), or raise --max-cells"
        )
    text = repr((target, [(a.name, a.values) for a in matrix.axes], sorted(fields.items())))
    return replace(matrix, digest=hashlib.sha256(text.encode()).hexdigest())


def _listed(names: list[str], shown: int = 6) -> str:
    more = f", ... {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more

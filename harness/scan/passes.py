"""`harness passes`: how much of a revision's resolution code the harness can evaluate.

Each registered pass is surveyed statically (`harness.closure.survey`), then,
when nothing blocks it and the matrix answers every view attribute it reads,
run alone over the matrix: an input it reads only at run time (a probe's
field, an environment variable) shows up there, and is declared, as null and
as true, for the next runs, until the pass runs or something no field can
answer stops it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness import gitio
from harness.closure.extract import with_defaults
from harness.closure.survey import PassSurvey
from harness.engine.branches import sites_of
from harness.engine.explore import evaluate_closure
from harness.engine.sandbox import load_order
from harness.errors import Absent, HarnessError, Unevaluable
from harness.scan.blind import one_way_conditions
from harness.scan.versions import Versions, bind_matrix


@dataclass(frozen=True)
class PassReport:
    survey: PassSurvey
    needs_fields: tuple[str, ...]  # view attributes the matrix does not declare
    blocked_by: tuple[tuple[str, str], ...]  # (name, reason)
    order: int | None = None  # its place in the order SGLang runs the passes (from 1)
    runs_under: str | None = None  # the `if` SGLang's handler runs it under, if any
    cells: int | None = None  # cells the matrix runs it on (its guard), None: every cell
    reached: bool | None = None  # whether a call from the entry point reaches it (None: no entry)
    one_way: tuple[tuple[str, str, str], ...] = ()  # (file:line, condition, seen) run alone

    @property
    def evaluable(self) -> bool:
        return not self.needs_fields and not self.blocked_by


def passes_at(versions: Versions, revision: gitio.Revision) -> list[PassReport]:
    """Every pass registered at `revision`, with what stands between it and an evaluation
    under the matrix of `versions`."""
    matrix = versions.matrix
    files = versions.files_at(revision)
    try:
        found = versions.front.surveys(files)
    except (Absent, Unevaluable) as exc:
        raise HarnessError(
            f"cannot list the passes at {revision.label}: {exc}; name a revision where "
            f"{files.target} exists and parses"
        ) from None
    defaults = versions.front.defaults(files)
    literal = {name for name, default in defaults.fields.items() if default.literal}
    answered = versions.view.answered if versions.view else frozenset(matrix.axis_names)
    answered = answered | literal
    reports = [_report(versions, revision, _defaulted(one, defaults), answered) for one in found]
    return _placed(versions, files, reports)


def _placed(versions: Versions, files, reports: list[PassReport]) -> list[PassReport]:
    """The reports with each pass's place in SGLang's run order, the `if` it runs under,
    and the cells the matrix's guard (if any) runs it on."""
    order = versions.front.run_order(files, [r.survey.name for r in reports])
    place = {name: n for n, name in enumerate(order.reached, 1)}
    if not order.entry:  # no entry point here: the order is unknown, not "unreached"
        place = {r.survey.name: None for r in reports}
    under = dict(order.guarded)
    out = []
    for r in reports:
        name = r.survey.name
        cells = versions.tables.guard_cells(name)
        reached = None if not order.entry else name in place
        out.append(replace(r, order=place.get(name), runs_under=under.get(name), cells=cells,
                           reached=reached))  # fmt: skip
    return out


def _defaulted(one: PassSurvey, defaults) -> PassSurvey:
    """The survey whose closure's view answers the defaults of the view's class."""
    return (
        one if one.closure is None else replace(one, closure=with_defaults(one.closure, defaults))
    )


MAX_RUNS = 20  # runs of one pass while looking for the inputs it reads at run time


def _report(versions, revision, one: PassSurvey, answered: frozenset[str]) -> PassReport:
    needs = tuple(name for name in one.reads if name not in answered)
    if one.closure is None or needs:
        return PassReport(one, needs, one.blocked_by)
    missing, blocked, branches = _run_time_inputs(versions, one, revision.label)
    one_way = () if missing or blocked else _one_way(one.closure, branches)
    return PassReport(one, tuple(missing), blocked, one_way=one_way)


def _one_way(closure, branches: bytes) -> tuple[tuple[str, str, str], ...]:
    """The conditions of the pass (and its helpers) that no cell took both ways."""
    found = one_way_conditions(sites_of(closure, load_order), branches)
    return tuple((site.where(), site.text, seen) for site, seen in found)


def _run_time_inputs(versions, one: PassSurvey, label: str) -> tuple[list[str], tuple, bytes]:
    """Run the pass alone; each input it lacks is then declared, as null and as true in
    turn (so both sides of a test on it run), until it runs or MAX_RUNS is spent. Also
    the branch flags of the run that went through."""
    matrix, missing = versions.matrix, []
    queue: list[dict] = [{}]
    for _ in range(MAX_RUNS):
        if not queue:
            break
        fields = queue.pop(0)
        trial = replace(matrix, fields={**matrix.fields, **fields})
        try:
            done = evaluate_closure(one.closure, trial, bind_matrix(trial), label,
                                    limits=versions.limits)  # fmt: skip
        except Unevaluable as exc:
            if exc.missing is None or exc.missing in fields:
                return missing, ((one.name, str(exc)),), b""
            if exc.missing not in missing:
                missing.append(exc.missing)
            queue += [{**fields, exc.missing: value} for value in (None, True)]
        else:
            if not missing:
                return missing, (), done.table.branches
    return missing, (), b""

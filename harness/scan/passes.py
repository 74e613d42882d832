"""`harness passes`: how much of a revision's resolution code the harness can evaluate.

Each registered pass is surveyed statically (`harness.closure.survey`), then,
when nothing blocks it and the matrix answers every view attribute it reads,
run alone over the matrix: an input it reads only at run time (a probe's
field, an environment variable) shows up there, and is declared as null for
the next run, until the pass runs or something no field can answer stops it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness import gitio
from harness.closure.survey import PassSurvey, survey
from harness.engine.explore import evaluate_closure
from harness.errors import Unevaluable
from harness.scan.versions import Versions, bind_matrix


@dataclass(frozen=True)
class PassReport:
    survey: PassSurvey
    needs_fields: tuple[str, ...]  # view attributes the matrix does not declare
    blocked_by: tuple[tuple[str, str], ...]  # (name, reason)

    @property
    def evaluable(self) -> bool:
        return not self.needs_fields and not self.blocked_by


def passes_at(versions: Versions, revision: gitio.Revision) -> list[PassReport]:
    """Every pass registered at `revision`, with what stands between it and an evaluation
    under the matrix of `versions`."""
    matrix = versions.matrix
    files = versions.files(revision.sha)
    found = survey(versions.sources, files, versions.bound.names, matrix.edit_hint, versions.view)
    answered = versions.view.answered if versions.view else frozenset(matrix.axis_names)
    return [_report(versions, revision, one, answered) for one in found]


MAX_RUNS = 20  # run-time inputs looked for, one run each, before giving up


def _report(versions, revision, one: PassSurvey, answered: frozenset[str]) -> PassReport:
    needs = tuple(name for name in one.reads if name not in answered)
    if one.closure is None or needs:
        return PassReport(one, needs, one.blocked_by)
    missing, matrix = [], versions.matrix
    for _ in range(MAX_RUNS):
        try:
            evaluate_closure(one.closure, matrix, bind_matrix(matrix), revision.label)
        except Unevaluable as exc:
            if exc.missing is None or exc.missing in missing:
                return PassReport(one, tuple(missing), ((one.name, str(exc)),))
            missing.append(exc.missing)  # declare it (as null) and look for the next one
            matrix = replace(matrix, fields={**matrix.fields, exc.missing: None})
            continue
        break
    return PassReport(one, tuple(missing), ())

"""`harness passes`: how much of a revision's resolution code the harness can evaluate.

Each registered pass is surveyed statically (`harness.closure.survey`), then,
when nothing blocks it and the matrix answers every view attribute it reads,
run alone over the matrix: a probe or view attribute it reads only at run time
shows up there.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness import gitio
from harness.closure.survey import PassSurvey, survey
from harness.engine.explore import evaluate_closure
from harness.errors import Unevaluable
from harness.scan.versions import Versions


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


def _report(versions, revision, one: PassSurvey, answered: frozenset[str]) -> PassReport:
    needs = tuple(name for name in one.reads if name not in answered)
    if one.closure is None or needs:
        return PassReport(one, needs, one.blocked_by)
    try:
        evaluate_closure(one.closure, versions.matrix, versions.bound, revision.label)
    except Unevaluable as exc:
        if exc.missing is not None:
            return PassReport(one, (exc.missing,), ())
        return PassReport(one, (), ((one.name, str(exc)),))
    return PassReport(one, (), ())

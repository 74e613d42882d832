"""The diff flow, end to end: revision -> state -> comparison -> report."""

from __future__ import annotations

import git

from harness.because import explain_rules, with_because
from harness.cache import TableCache
from harness.compare import compare
from harness.git import Revision
from harness.matrix import Matrix
from harness.report.model import DiffReport, build_report
from harness.versions import Versions, code_for


def diff(
    repo: git.Repo,
    matrix: Matrix,
    base: Revision,
    head: Revision,
    exhaustive: bool = False,
    where: tuple[int, ...] | None = None,
    cache: TableCache | None = None,
) -> DiffReport:
    """Evaluate both revisions over the matrix (or find them cached) and compare."""
    versions = Versions(repo, matrix, cache, exhaustive)
    states = {"base": versions.at(base), "head": versions.at(head)}
    comparison = compare(matrix, states["base"].table, states["head"].table, where)
    report = build_report(matrix, base, head, comparison, states)
    codes = (
        code_for(versions, states[s], rev.label) for s, rev in (("base", base), ("head", head))
    )
    report.rules = with_because(report.rules, explain_rules(versions, *codes, comparison.rules))
    return report

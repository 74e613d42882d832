"""The flow, end to end: revision -> source -> outcome table -> comparison -> report."""

from __future__ import annotations

import git

from harness.compare import compare
from harness.evaluate import evaluate
from harness.git import Revision, read_file
from harness.matrix import Matrix
from harness.report.model import DiffReport, build_report
from harness.world import Bound, bind
from harness.worlds import world_named


def bind_matrix(matrix: Matrix) -> Bound:
    """The matrix's world, compiled against it (once per run, shared by every revision)."""
    return bind(world_named(matrix.world, matrix.source), matrix)


def diff(
    repo: git.Repo,
    matrix: Matrix,
    base: Revision,
    head: Revision,
    exhaustive: bool = False,
    where: tuple[int, ...] | None = None,
) -> DiffReport:
    """Evaluate both revisions over the matrix and compare their outcomes.

    Outcomes name no revision, so when both sides hold the same text (a commit
    that left the file alone) the one evaluation serves both.
    """
    bound = bind_matrix(matrix)
    tables, by_source = {}, {}
    for side, rev in (("base", base), ("head", head)):
        source = read_file(repo, rev, matrix.target.path)
        if source not in by_source:
            by_source[source] = evaluate(source, matrix, bound, rev.label, exhaustive).table
        tables[side] = by_source[source]
    comparison = compare(matrix, tables["base"], tables["head"], where)
    return build_report(matrix, base, head, comparison, tables)

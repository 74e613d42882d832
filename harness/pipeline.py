"""The diff flow, end to end: revision -> state -> comparison -> report."""

from __future__ import annotations

from dataclasses import replace

import git

from harness.because import Difference, differences
from harness.cache import TableCache
from harness.compare import Rule, compare
from harness.errors import Unevaluable
from harness.git import Revision
from harness.matrix import Matrix
from harness.report.model import DiffReport, build_report
from harness.trace import trace_cell
from harness.versions import Versions, code_at

MAX_EXPLAINED = 10  # rules that get a `because` (each costs two traced calls)


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
    if comparison.rules:
        reasons = explain_rules(versions, base, head, comparison.rules)
        pairs = zip(report.rules, reasons, strict=True)
        report.rules = [replace(view, because=tuple(why)) for view, why in pairs]
    return report


def explain_rules(
    versions: Versions, base: Revision, head: Revision, rules: list[Rule]
) -> list[list[Difference]]:
    """Per rule (the first MAX_EXPLAINED), the operands that differ on its first cell."""
    codes = code_at(versions, base), code_at(versions, head)
    if None in codes:
        return [[] for _ in rules]
    reasons = []
    for rule in rules[:MAX_EXPLAINED]:
        cell = tuple((mask & -mask).bit_length() - 1 for mask in rule.masks)
        try:
            traces = [trace_cell(c.closure, c.source, versions.matrix, versions.bound, c.label,
                                 cell) for c in codes]  # fmt: skip
        except Unevaluable:
            traces = None
        reasons.append(differences(*traces) if traces else [])
    return reasons + [[] for _ in rules[MAX_EXPLAINED:]]

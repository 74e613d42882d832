"""The diff flow: two revisions -> their states -> the comparison and why rules changed."""

from __future__ import annotations

from dataclasses import dataclass

import git

from harness.gitio import Revision
from harness.matrix.model import Matrix
from harness.scan.because import Difference, explain_rules
from harness.scan.cache import TableCache
from harness.scan.compare import Comparison, compare
from harness.scan.versions import State, Versions


@dataclass
class Diff:
    """Two revisions' states, the cells whose outcomes differ, and per rule why."""

    matrix: Matrix
    base: Revision
    head: Revision
    states: dict[str, State]  # "base", "head"
    comparison: Comparison
    because: list[list[Difference]]  # per rule of the comparison


def diff(
    repo: git.Repo,
    matrix: Matrix,
    base: Revision,
    head: Revision,
    exhaustive: bool = False,
    where: tuple[int, ...] | None = None,
    cache: TableCache | None = None,
) -> Diff:
    """Evaluate both revisions over the matrix (or find them cached) and compare."""
    versions = Versions(repo, matrix, cache, exhaustive)
    states = {"base": versions.at(base), "head": versions.at(head)}
    comparison = compare(matrix, states["base"].table, states["head"].table, where)
    codes = (
        versions.code_for(states[side], rev.label) for side, rev in (("base", base), ("head", head))
    )
    because = explain_rules(versions, *codes, comparison.rules)
    return Diff(matrix, base, head, states, comparison, because)

"""The diff flow: two revisions -> their states -> the comparison and why rules changed."""

from __future__ import annotations

from dataclasses import dataclass

from harness.gitio import Revision
from harness.matrix.model import Matrix
from harness.scan.because import Difference, explain_rules
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
    versions: Versions, base: Revision, head: Revision, where: tuple[int, ...] | None = None
) -> Diff:
    """Evaluate both revisions over the matrix (or find them cached) and compare."""
    matrix = versions.matrix
    states = dict(zip(("base", "head"), versions.at_all([base, head]), strict=True))
    comparison = compare(matrix, states["base"].table, states["head"].table, where)
    codes = (
        versions.code_for(states[side], rev.label) for side, rev in (("base", base), ("head", head))
    )
    because = explain_rules(versions, *codes, comparison.rules)
    return Diff(matrix, base, head, states, comparison, because)
